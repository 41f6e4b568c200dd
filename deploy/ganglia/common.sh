# Shared settings for deploy/ganglia/{start,stop,status}.sh: sourced, not run.
#
# Every setting is an environment variable with a default; the same can be given as a flag to any of the scripts:
#   --run-dir DIR           GANGLIA_RUN_DIR          runtime dir: configs, logs, PID files, RRDs  (default <repo>/.run/ganglia)
#   --cluster NAME          GANGLIA_CLUSTER          cluster name in gmond and gmetad             (default hcep)
#   --gmond-port N          GMOND_PORT               gmond XML (TCP) and metric channel (UDP)     (default 8649)
#   --xml-port N            GMETAD_XML_PORT          gmetad XML port                              (default 8651)
#   --interactive-port N    GMETAD_INTERACTIVE_PORT  gmetad interactive port                      (default 8652)
#   --collect-every S       GANGLIA_COLLECT_EVERY    gmond sampling period, seconds               (default 15)
#   --poll-interval S       GANGLIA_POLL_INTERVAL    gmetad polling period = RRD step, seconds    (default 15)
#   --rrd-rootdir DIR       GANGLIA_RRD_ROOTDIR      gmetad rrd_rootdir                           (default RUN_DIR/rrds)
#   --mute                  GANGLIA_MUTE=1           gmond reports no metrics of this machine: it only aggregates
#                                                    what gmetric sends (the live demo's simulated nodes)
# Everything listens on 127.0.0.1 only.

GANGLIA_DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$GANGLIA_DEPLOY_DIR/../lib.sh"  # port_open, live_pid, apt_install_missing, project_python
GANGLIA_REPO_ROOT="$(cd "$GANGLIA_DEPLOY_DIR/../.." && pwd)"

gsay() { printf '==> ganglia: %s\n' "$*" >&2; }
gdie() { printf 'ganglia: error: %s\n' "$*" >&2; exit 1; }

ganglia_parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --run-dir) GANGLIA_RUN_DIR="${2:?--run-dir needs a value}"; shift 2 ;;
            --cluster) GANGLIA_CLUSTER="${2:?--cluster needs a value}"; shift 2 ;;
            --gmond-port) GMOND_PORT="${2:?--gmond-port needs a value}"; shift 2 ;;
            --xml-port) GMETAD_XML_PORT="${2:?--xml-port needs a value}"; shift 2 ;;
            --interactive-port) GMETAD_INTERACTIVE_PORT="${2:?--interactive-port needs a value}"; shift 2 ;;
            --collect-every) GANGLIA_COLLECT_EVERY="${2:?--collect-every needs a value}"; shift 2 ;;
            --poll-interval) GANGLIA_POLL_INTERVAL="${2:?--poll-interval needs a value}"; shift 2 ;;
            --rrd-rootdir) GANGLIA_RRD_ROOTDIR="${2:?--rrd-rootdir needs a value}"; shift 2 ;;
            --mute) GANGLIA_MUTE=1; shift ;;
            -h|--help) sed -n '2,15p' "$GANGLIA_DEPLOY_DIR/common.sh" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) gdie "unknown argument: $1 (see --help)" ;;
        esac
    done
    GANGLIA_RUN_DIR="${GANGLIA_RUN_DIR:-$GANGLIA_REPO_ROOT/.run/ganglia}"
    case "$GANGLIA_RUN_DIR" in /*) ;; *) GANGLIA_RUN_DIR="$PWD/$GANGLIA_RUN_DIR" ;; esac
    GANGLIA_CLUSTER="${GANGLIA_CLUSTER:-hcep}"
    GMOND_PORT="${GMOND_PORT:-8649}"
    GMETAD_XML_PORT="${GMETAD_XML_PORT:-8651}"
    GMETAD_INTERACTIVE_PORT="${GMETAD_INTERACTIVE_PORT:-8652}"
    GANGLIA_COLLECT_EVERY="${GANGLIA_COLLECT_EVERY:-15}"
    GANGLIA_POLL_INTERVAL="${GANGLIA_POLL_INTERVAL:-15}"
    GANGLIA_RRD_ROOTDIR="${GANGLIA_RRD_ROOTDIR:-$GANGLIA_RUN_DIR/rrds}"
    case "${GANGLIA_MUTE:-0}" in 1|yes|true) GANGLIA_MUTE=yes ;; *) GANGLIA_MUTE=no ;; esac
    local n
    for n in GMOND_PORT GMETAD_XML_PORT GMETAD_INTERACTIVE_PORT GANGLIA_COLLECT_EVERY GANGLIA_POLL_INTERVAL; do
        [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || gdie "$n must be a positive integer, got '${!n}'"
    done
    # The name goes into both configs (and sed): keep it to characters that need no quoting anywhere.
    [[ "$GANGLIA_CLUSTER" =~ ^[A-Za-z0-9_.-]+$ ]] || gdie "cluster name must match [A-Za-z0-9_.-]+, got '$GANGLIA_CLUSTER'"
}

# pid_of NAME: the PID in RUN_DIR/NAME.pid if that process is alive and is NAME (a stale file's PID may be reused).
pid_of() {
    local pid
    pid="$(live_pid "$GANGLIA_RUN_DIR/$1.pid")" || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 1
    printf '%s\n' "$pid"
}
