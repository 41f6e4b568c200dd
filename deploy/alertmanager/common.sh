# Shared settings for deploy/alertmanager/{install,start,stop,status}.sh: sourced, not run.
#
# Every setting is an environment variable with a default; the same can be given as a flag to any of the scripts:
#   --run-dir DIR          ALERTMANAGER_RUN_DIR         config, data, log, PID file (default <repo>/.run/alertmanager)
#   --port N               ALERTMANAGER_PORT            HTTP API on 127.0.0.1                    (default 9093)
#   --receiver-url URL     ALERTMANAGER_RECEIVER_URL    the webhook notifications go to (default http://127.0.0.1:9/,
#                                                       the discard port: nowhere)
#   --group-by LABELS      ALERTMANAGER_GROUP_BY        comma-separated grouping labels          (default job_id,app_id)
#   --group-wait DUR       ALERTMANAGER_GROUP_WAIT      wait before a new group's first notice   (default 1s)
#   --group-interval DUR   ALERTMANAGER_GROUP_INTERVAL  wait before notifying a changed group    (default 2s)
#   --repeat-interval DUR  ALERTMANAGER_REPEAT_INTERVAL re-notify an unchanged firing group      (default 1h)
#   --force                ALERTMANAGER_FORCE=1         stop.sh: SIGKILL at once
# Durations as Alertmanager writes them: 500ms, 2s, 5m, 4h.  Everything listens on 127.0.0.1; the HA cluster
# listener is off.

AM_DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$AM_DEPLOY_DIR/../lib.sh"  # port_open, live_pid, apt_install_missing, project_python
AM_REPO_ROOT="$(cd "$AM_DEPLOY_DIR/../.." && pwd)"
#: Debian's package and the binaries it ships.
AM_PACKAGE=prometheus-alertmanager
AM_BIN="${ALERTMANAGER_BIN:-/usr/bin/prometheus-alertmanager}"
AM_TOOL="${AMTOOL_BIN:-/usr/bin/amtool}"

asay() { printf '==> alertmanager: %s\n' "$*" >&2; }
adie() { printf 'alertmanager: error: %s\n' "$*" >&2; exit 1; }

alertmanager_parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --run-dir) ALERTMANAGER_RUN_DIR="${2:?--run-dir needs a value}"; shift 2 ;;
            --port) ALERTMANAGER_PORT="${2:?--port needs a value}"; shift 2 ;;
            --receiver-url) ALERTMANAGER_RECEIVER_URL="${2:?--receiver-url needs a value}"; shift 2 ;;
            --group-by) ALERTMANAGER_GROUP_BY="${2:?--group-by needs a value}"; shift 2 ;;
            --group-wait) ALERTMANAGER_GROUP_WAIT="${2:?--group-wait needs a value}"; shift 2 ;;
            --group-interval) ALERTMANAGER_GROUP_INTERVAL="${2:?--group-interval needs a value}"; shift 2 ;;
            --repeat-interval) ALERTMANAGER_REPEAT_INTERVAL="${2:?--repeat-interval needs a value}"; shift 2 ;;
            --force) ALERTMANAGER_FORCE=1; shift ;;
            -h|--help) sed -n '2,15p' "$AM_DEPLOY_DIR/common.sh" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) adie "unknown argument: $1 (see --help)" ;;
        esac
    done
    ALERTMANAGER_RUN_DIR="${ALERTMANAGER_RUN_DIR:-$AM_REPO_ROOT/.run/alertmanager}"
    case "$ALERTMANAGER_RUN_DIR" in /*) ;; *) ALERTMANAGER_RUN_DIR="$PWD/$ALERTMANAGER_RUN_DIR" ;; esac
    ALERTMANAGER_PORT="${ALERTMANAGER_PORT:-9093}"
    # Port 9 (discard) on loopback: a config with no receiver given is valid and delivers nowhere.
    ALERTMANAGER_RECEIVER_URL="${ALERTMANAGER_RECEIVER_URL:-http://127.0.0.1:9/}"
    ALERTMANAGER_GROUP_BY="${ALERTMANAGER_GROUP_BY:-job_id,app_id}"
    ALERTMANAGER_GROUP_WAIT="${ALERTMANAGER_GROUP_WAIT:-1s}"
    ALERTMANAGER_GROUP_INTERVAL="${ALERTMANAGER_GROUP_INTERVAL:-2s}"
    ALERTMANAGER_REPEAT_INTERVAL="${ALERTMANAGER_REPEAT_INTERVAL:-1h}"
    ALERTMANAGER_FORCE="${ALERTMANAGER_FORCE:-0}"
    [[ "$ALERTMANAGER_PORT" =~ ^[1-9][0-9]*$ ]] && [ "$ALERTMANAGER_PORT" -le 65535 ] \
        || adie "ALERTMANAGER_PORT must be a TCP port, got '$ALERTMANAGER_PORT'"
    # The values go into YAML (and sed): keep them to characters that need no quoting anywhere.
    local url_re='^https?://[^[:space:]'"'"'"|\\]+$'
    [[ "$ALERTMANAGER_RECEIVER_URL" =~ $url_re ]] \
        || adie "--receiver-url must be an http(s) URL without spaces, quotes or |, got '$ALERTMANAGER_RECEIVER_URL'"
    local labels_re='^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$'
    [[ "$ALERTMANAGER_GROUP_BY" =~ $labels_re ]] \
        || adie "--group-by must be label names separated by commas, got '$ALERTMANAGER_GROUP_BY'"
    local n
    for n in ALERTMANAGER_GROUP_WAIT ALERTMANAGER_GROUP_INTERVAL ALERTMANAGER_REPEAT_INTERVAL; do
        [[ "${!n}" =~ ^([0-9]+(ms|s|m|h|d|w|y))+$ ]] || adie "$n must be a duration such as 2s or 5m, got '${!n}'"
    done
}

# sed_value TEXT: TEXT made safe as a sed replacement with | as the delimiter.
sed_value() {
    local v="${1//\\/\\\\}"
    v="${v//&/\\&}"
    printf '%s' "${v//|/\\|}"
}

# render_config: the config rendered from alertmanager.yml.tmpl, on stdout (values checked by the parser above).
render_config() {
    local group_by
    group_by="$(printf '%s' "$ALERTMANAGER_GROUP_BY" | sed 's/,/, /g')"
    sed -e "s|@RECEIVER_URL@|$(sed_value "$ALERTMANAGER_RECEIVER_URL")|g" \
        -e "s|@GROUP_BY@|$group_by|g" \
        -e "s|@GROUP_WAIT@|$ALERTMANAGER_GROUP_WAIT|g" \
        -e "s|@GROUP_INTERVAL@|$ALERTMANAGER_GROUP_INTERVAL|g" \
        -e "s|@REPEAT_INTERVAL@|$ALERTMANAGER_REPEAT_INTERVAL|g" \
        "$AM_DEPLOY_DIR/alertmanager.yml.tmpl"
}

# pid_of: the PID in RUN_DIR/alertmanager.pid if that process is alive and is Alertmanager run on this run dir (a
# stale file's PID may have been reused).
pid_of() {
    local pid
    pid="$(live_pid "$ALERTMANAGER_RUN_DIR/alertmanager.pid")" || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null \
        | grep -qF -- "--config.file=$ALERTMANAGER_RUN_DIR/alertmanager.yml" || return 1
    printf '%s\n' "$pid"
}

# http_ok [METHOD] PATH: METHOD (default GET) http://127.0.0.1:PORT/PATH answers 200 (bash's /dev/tcp: no curl needed).
http_ok() {
    local method=GET status
    [ $# -lt 2 ] || { method="$1"; shift; }
    status="$({
        exec 3<>"/dev/tcp/127.0.0.1/$ALERTMANAGER_PORT" || exit 1
        printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' \
            "$method" "$1" >&3
        timeout 5 head -n 1 <&3
    } 2>/dev/null)" || return 1
    [[ "$status" == "HTTP/1."?" 200"* ]]
}
