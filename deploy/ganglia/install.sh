#!/usr/bin/env bash
# Install what the Ganglia collector and its tests need.  Idempotent: apt-get update and install run only when a
# Debian package is missing, pip only when the rrdtool binding does not import.
#
#   bash deploy/ganglia/install.sh
#
# Debian: ganglia-monitor (gmond, gmetric), gmetad, rrdtool (CLI), librrd-dev + pkg-config (to build the binding),
# gcc + libc6-dev (loopback_bind.so, which keeps gmetad's ports on 127.0.0.1), iproute2 (ss: start.sh checks that).
# The packages' own services are kept from starting (policy-rc.d); deploy/ganglia/start.sh runs private instances.
# Python: rrdtool (the binding), into $PYTHON, else the active virtualenv, else the project's .venv, else python3.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

APT_PACKAGES=(ganglia-monitor gmetad rrdtool librrd-dev pkg-config gcc libc6-dev iproute2)

install_apt() {
    local missing=() pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || gdie "missing Debian packages (${missing[*]}) and not root"
        sudo=(sudo)
    fi
    gsay "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d 101 keeps the packages' own gmond/gmetad services from starting (they would bind 0.0.0.0:8649).
    local policy=/usr/sbin/policy-rc.d created=0
    if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
    fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    [ "$created" -eq 1 ] && rm -f "$policy"
    return 0
}

pick_python() {
    if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"
    elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then echo "$VIRTUAL_ENV/bin/python"
    elif [ -x "$GANGLIA_REPO_ROOT/.venv/bin/python" ]; then echo "$GANGLIA_REPO_ROOT/.venv/bin/python"
    else command -v python3
    fi
}

install_pip() {
    local py
    py="$(pick_python)"
    if "$py" -c 'import rrdtool' 2>/dev/null; then
        return 0
    fi
    gsay "pip install rrdtool into $py"
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$py" -m pip install -q rrdtool
    "$py" -c 'import rrdtool' || gdie "rrdtool binding does not import after pip install"
}

install_apt
install_pip
gsay "ready: $(gmond --version 2>&1 | head -1), $(gmetad --version 2>&1 | head -1), rrdtool $("$(pick_python)" -c 'import rrdtool; print(rrdtool.lib_version())')"
