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
    local rc=0
    apt_install_missing ganglia "${APT_PACKAGES[@]}" || rc=$?
    [ "$rc" -eq 0 ] || gdie "$(apt_failure "$rc" "${APT_PACKAGES[@]}")"
}

install_pip() {
    local py
    py="$(project_python)"
    if "$py" -c 'import rrdtool' 2>/dev/null; then
        return 0
    fi
    gsay "pip install rrdtool into $py"
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$py" -m pip install -q rrdtool
    "$py" -c 'import rrdtool' || gdie "rrdtool binding does not import after pip install"
}

install_apt
install_pip
gsay "ready: $(gmond --version 2>&1 | head -1), $(gmetad --version 2>&1 | head -1), rrdtool $("$(project_python)" -c 'import rrdtool; print(rrdtool.lib_version())')"
