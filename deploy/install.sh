#!/usr/bin/env bash
# Install everything hcep needs into ./.venv.  Idempotent: a second run only checks, and is quick.
#
#   bash deploy/install.sh          # system packages (if missing), .venv, pip install -e '.[dev]'
#
# Safe on a fresh Debian 12 as root (CI runs it with CI=true and no stdin).  Later parts of the project (Kafka,
# Ganglia, Spark, Streamlit) add their Debian packages to APT_PACKAGES and their Python packages to pyproject.toml;
# services get their own deploy/*.sh scripts that source this one first.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HCEP_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

# ---------------------------------------------------------------------------------------------------------------------
# Debian packages the project needs.  Add to this list; each is installed only when `dpkg -s` says it is missing, and
# `apt-get update` runs only when something is missing.
APT_PACKAGES=(
    python3-venv        # python3 -m venv (and ensurepip) on Debian
    python3-dev gcc     # python-lzf (Spark's lzf event-log codec) has no wheel: pip builds it from source
)
# ---------------------------------------------------------------------------------------------------------------------

say() { printf '==> %s\n' "$*" >&2; }
# shellcheck source=lib.sh
source "$ROOT/deploy/lib.sh"

install_apt_packages() {
    apt_ensure hcep "${APT_PACKAGES[@]}"
}

make_venv() {
    if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        return 0
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        say "hcep needs Python >= 3.11; '$PYTHON' is $("$PYTHON" --version 2>&1 || echo missing) (set PYTHON=...)"
        return 1
    fi
    say "creating $VENV ($("$PYTHON" --version 2>&1))"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
}

install_python_packages() {
    # Re-install only when pyproject.toml changed since the last successful install (the editable install picks up
    # code changes by itself).
    local stamp="$VENV/.hcep-installed" want
    want="$(cd "$ROOT" && sha256sum pyproject.toml | cut -d' ' -f1)"
    # (Checked from / so that the working directory cannot stand in for the installed package.)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && (cd / && "$VENV/bin/python" -c \
        'import sys, app, lark, yaml; sys.exit(not app.__file__.startswith(sys.argv[1] + "/"))' "$ROOT") 2>/dev/null
    then
        say "Python packages up to date in $VENV"
        return 0
    fi
    say "installing hcep and its Python dependencies into $VENV (pip, a minute on a fresh machine)"
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
    local log="$VENV/pip-install.log"
    # Progress: one line per package pip collects; the full log stays in $log and is shown when pip fails.
    if ! (cd "$ROOT" && "$VENV/bin/python" -m pip install --progress-bar off -e '.[dev]') 2>&1 | tee "$log" \
        | { grep --line-buffered -E '^(Collecting|Processing|Successfully installed)' | cut -c1-110 | sed 's/^/    /' >&2 || true; }
    then
        say "pip install failed; the end of $log:"
        tail -n 40 "$log" >&2
        return 1
    fi
    echo "$want" >"$stamp"
    say "installed: $("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null \
        | grep -iE '^(hcep|lark|pyyaml|pytest|hypothesis|ruff)==' | tr '\n' ' ')"
}

install_apt_packages
make_venv
install_python_packages
# The engine's hot path compiled with mypyc (contracts/compiled.py); only when its sources changed since the last
# build, about a minute; a failed build leaves pure Python (the reference) and says why.
"$VENV/bin/python" "$ROOT/deploy/compile_engine.py"

# The real parts, each with its own idempotent installer (Debian packages and the Python bindings they need).
PYTHON="$VENV/bin/python" bash "$ROOT/deploy/ganglia/install.sh"
bash "$ROOT/deploy/dashboard/install.sh"
bash "$ROOT/deploy/kafka/install.sh"
bash "$ROOT/deploy/alertmanager/install.sh"
