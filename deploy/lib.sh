# Helpers every deploy script shares: sourced, not run (deploy/install.sh, deploy/*/install.sh, deploy/*/common.sh).
#
# Kept here so that installing a Debian package, finding the project's Python and asking whether a service is up are
# done one way across Kafka, Ganglia, Alertmanager and the dashboard.  Nothing here exits: each returns a status and
# the caller decides (an installer may go on without apt-get, a start script may not).

HCEP_DEPLOY_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HCEP_REPO_ROOT="$(cd "$HCEP_DEPLOY_LIB_DIR/.." && pwd)"

# apt_missing PKG...: the packages of PKG... that dpkg says are not installed, one per line.
apt_missing() {
    local pkg
    for pkg in "$@"; do
        # dpkg -s alone also succeeds for a removed package whose config files remain
        [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || printf '%s\n' "$pkg"
    done
}

# apt_install_missing WHO PKG...: install the PKGs dpkg says are missing (apt-get update only then), saying so on
# stderr as "==> WHO: ...".  The packages' own services are kept from starting (policy-rc.d 101): a Debian gmond,
# gmetad or Alertmanager would start at once on 0.0.0.0, and deploy/*/start.sh runs private loopback instances.
# Returns 0 when nothing was missing or all is installed, 2 when there is no dpkg/apt-get, 3 when not root and no sudo.
apt_install_missing() {
    local who="$1"
    shift
    command -v dpkg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 || return 2
    local missing=()
    mapfile -t missing < <(apt_missing "$@")
    [ "${#missing[@]}" -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || return 3
        sudo=(sudo)
    fi
    printf '==> %s: installing Debian packages: %s\n' "$who" "${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    local policy=/usr/sbin/policy-rc.d created=0
    if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
    fi
    local rc=0
    "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        >/dev/null || rc=$?
    [ "$created" -eq 1 ] && rm -f "$policy"
    return "$rc"
}

# apt_failure STATUS PKG...: the reason for a non-zero apt_install_missing status, naming what is missing.
apt_failure() {
    local status="$1" missing
    shift
    missing="$(apt_missing "$@" 2>/dev/null | tr '\n' ' ')"
    missing="${missing% }"
    case "$status" in
        2) printf 'missing Debian packages (%s) and no dpkg/apt-get here\n' "${missing:-$*}" ;;
        3) printf 'missing Debian packages (%s) and not root (no sudo): install them and re-run\n' "$missing" ;;
        *) printf 'apt-get failed (exit %s) installing %s\n' "$status" "$missing" ;;
    esac
}

# apt_ensure WHO PKG...: apt_install_missing, for an installer that can go on without apt-get: with no dpkg/apt-get
# it says it is not checking and returns 0; any other failure is said (naming what is missing) and returns 1.
apt_ensure() {
    local who="$1" rc=0
    shift
    apt_install_missing "$who" "$@" || rc=$?
    case "$rc" in
        0) ;;
        2) printf '==> %s: no dpkg/apt-get here: not checking Debian packages (%s)\n' "$who" "$*" >&2 ;;
        *) printf '==> %s: %s\n' "$who" "$(apt_failure "$rc" "$@")" >&2; return 1 ;;
    esac
}

# project_python: $PYTHON, else the active virtualenv's, else the project's .venv, else python3.
project_python() {
    if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"
    elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then echo "$VIRTUAL_ENV/bin/python"
    elif [ -x "$HCEP_REPO_ROOT/.venv/bin/python" ]; then echo "$HCEP_REPO_ROOT/.venv/bin/python"
    else command -v python3
    fi
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# live_pid FILE: the PID written in FILE if that process is alive (the caller checks it is the right program: a
# stale file's PID may have been reused).
live_pid() {
    local pid
    [ -f "$1" ] || return 1
    pid="$(tr -dc '0-9' <"$1")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    printf '%s\n' "$pid"
}
