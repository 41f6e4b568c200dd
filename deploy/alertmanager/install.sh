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

install_apt() {
    [ -z "$(apt_missing "$AM_PACKAGE" 2>/dev/null)" ] && [ -x "$AM_BIN" ] && return 0
    local rc=0
    apt_install_missing alertmanager "$AM_PACKAGE" || rc=$?
    if [ "$rc" -eq 2 ]; then
        [ -x "$AM_BIN" ] && return 0
        adie "$AM_PACKAGE is missing and there is no apt-get (set ALERTMANAGER_BIN to an alertmanager binary)"
    fi
    [ "$rc" -eq 0 ] || adie "$(apt_failure "$rc" "$AM_PACKAGE")"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
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
