#!/usr/bin/env bash
# Install Prometheus Alertmanager for hcep: Debian's prometheus-alertmanager package (the alertmanager binary as
# /usr/bin/prometheus-alertmanager, and amtool).  Idempotent: apt-get update and install run only when the package is
# missing; a second run only checks.
#
#   bash deploy/alertmanager/install.sh
#
# The package's own service is kept from starting (policy-rc.d, as for Ganglia): it would listen on 0.0.0.0:9093 and
# cluster on 0.0.0.0:9094.  deploy/alertmanager/start.sh runs private instances on 127.0.0.1 instead; production
# hosts use hcep-alertmanager.service (see README.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

installed() {  # dpkg -s alone also succeeds for a removed package whose config files remain
    [ "$(dpkg-query -W -f='${Status}' "$AM_PACKAGE" 2>/dev/null)" = "install ok installed" ] && [ -x "$AM_BIN" ]
}

install_apt() {
    installed && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        [ -x "$AM_BIN" ] && return 0
        adie "$AM_PACKAGE is missing and there is no apt-get (set ALERTMANAGER_BIN to an alertmanager binary)"
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || adie "missing Debian package $AM_PACKAGE and not root"
        sudo=(sudo)
    fi
    asay "installing Debian package: $AM_PACKAGE"
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d 101 keeps the package's own service from starting (it would bind 0.0.0.0).
    local policy=/usr/sbin/policy-rc.d created=0
    if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
    fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$AM_PACKAGE" >/dev/null
    [ "$created" -eq 1 ] && rm -f "$policy"
    # The package also enables its service for the next boot (0.0.0.0:9093 and :9094): turn that off too, since we
    # installed it (an Alertmanager the operator installed before is left as it is).
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        "${sudo[@]}" systemctl disable --now "$AM_PACKAGE.service" >/dev/null 2>&1 || true
    elif command -v update-rc.d >/dev/null 2>&1; then
        "${sudo[@]}" update-rc.d "$AM_PACKAGE" disable >/dev/null 2>&1 || true
    fi
    asay "disabled Debian's own $AM_PACKAGE service (deploy/alertmanager/start.sh runs private instances)"
    return 0
}

install_apt
[ -x "$AM_BIN" ] || adie "$AM_BIN not found after installing $AM_PACKAGE"
asay "ready: $("$AM_BIN" --version 2>&1 | head -n 1)"
