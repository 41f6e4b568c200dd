#!/usr/bin/env bash
# Install what the dashboard and its browser tests need.  Idempotent: apt-get runs only when a Debian package is
# missing, pip only when a Python package does not import.
#
#   bash deploy/dashboard/install.sh
#
# Debian: chromium (the browser the Playwright tests drive: /usr/bin/chromium -- Playwright never downloads one here)
# and fonts-dejavu-core (so pages and screenshots have a font).  Python: streamlit, altair, pandas<3, pyarrow and
# playwright (the client library only), into $PYTHON, else the active virtualenv, else the project's .venv, else
# python3 -- normally already there from pyproject.toml, then this only checks.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
APT_PACKAGES=(chromium fonts-dejavu-core)
PY_IMPORTS=(streamlit altair pandas pyarrow playwright)
PY_PACKAGES=(streamlit altair "pandas<3" pyarrow playwright)

say() { printf '==> dashboard: %s\n' "$*" >&2; }
# shellcheck source=../lib.sh
source "$ROOT/deploy/lib.sh"

install_apt() {
    apt_ensure dashboard "${APT_PACKAGES[@]}"
}

install_pip() {
    local py missing=() i
    py="$(project_python)"
    # One interpreter start for all: find_spec, not import (streamlit takes seconds to import).
    local absent
    absent="$("$py" -c 'import importlib.util as u, sys
print(" ".join(str(i) for i, m in enumerate(sys.argv[1:]) if u.find_spec(m) is None))' "${PY_IMPORTS[@]}")"
    for i in $absent; do missing+=("${PY_PACKAGES[$i]}"); done
    [ "${#missing[@]}" -eq 0 ] && return 0
    say "pip installing into $py: ${missing[*]}"
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$py" -m pip install -q --progress-bar off "${missing[@]}"
}

install_apt
install_pip
if [ -x /usr/bin/chromium ]; then
    say "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
else
    say "chromium is not at /usr/bin/chromium"; exit 1
fi
