# Shared settings for deploy/spark/history-{start,stop}.sh (Spark's History Server): sourced, not run.
#
# Every setting is an environment variable with a default; the same can be given as a flag to either script:
#   --log-dir DIR     SPARK_HISTORY_LOG_DIR   the event-log directory it reads (spark.history.fs.logDirectory)
#                                             (default <repo>/.run/spark-events)
#   --run-dir DIR     SPARK_HISTORY_RUN_DIR   runtime dir: properties, log, PID file   (default <repo>/.run/spark-history)
#   --port N          SPARK_HISTORY_PORT      web UI and REST API on 127.0.0.1          (default 18080)
#   --spark-home DIR  SPARK_HOME              a Spark distribution (default: the pyspark package of the project's Python)
#   SPARK_HISTORY_HEAP  JVM heap (default 512m); SPARK_HISTORY_WAIT  seconds to wait for it to answer (default 300)
# It listens on 127.0.0.1 only (SPARK_LOCAL_IP); the REST API is http://127.0.0.1:PORT/api/v1/applications.

SPARK_HISTORY_DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$SPARK_HISTORY_DEPLOY_DIR/../lib.sh"  # port_open, live_pid, project_python
SPARK_HISTORY_REPO_ROOT="$(cd "$SPARK_HISTORY_DEPLOY_DIR/../.." && pwd)"

hsay() { printf '==> spark-history: %s\n' "$*" >&2; }
hdie() { printf 'spark-history: error: %s\n' "$*" >&2; exit 1; }

history_parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --log-dir) SPARK_HISTORY_LOG_DIR="${2:?--log-dir needs a value}"; shift 2 ;;
            --run-dir) SPARK_HISTORY_RUN_DIR="${2:?--run-dir needs a value}"; shift 2 ;;
            --port) SPARK_HISTORY_PORT="${2:?--port needs a value}"; shift 2 ;;
            --spark-home) SPARK_HOME="${2:?--spark-home needs a value}"; shift 2 ;;
            --force) SPARK_HISTORY_FORCE=1; shift ;;
            -h|--help) sed -n '2,11p' "$SPARK_HISTORY_DEPLOY_DIR/history-common.sh" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) hdie "unknown argument: $1 (see --help)" ;;
        esac
    done
    SPARK_HISTORY_RUN_DIR="${SPARK_HISTORY_RUN_DIR:-$SPARK_HISTORY_REPO_ROOT/.run/spark-history}"
    case "$SPARK_HISTORY_RUN_DIR" in /*) ;; *) SPARK_HISTORY_RUN_DIR="$PWD/$SPARK_HISTORY_RUN_DIR" ;; esac
    SPARK_HISTORY_LOG_DIR="${SPARK_HISTORY_LOG_DIR:-$SPARK_HISTORY_REPO_ROOT/.run/spark-events}"
    case "$SPARK_HISTORY_LOG_DIR" in /*) ;; *) SPARK_HISTORY_LOG_DIR="$PWD/$SPARK_HISTORY_LOG_DIR" ;; esac
    SPARK_HISTORY_PORT="${SPARK_HISTORY_PORT:-18080}"
    SPARK_HISTORY_HEAP="${SPARK_HISTORY_HEAP:-512m}"
    SPARK_HISTORY_FORCE="${SPARK_HISTORY_FORCE:-0}"
    [[ "$SPARK_HISTORY_PORT" =~ ^[1-9][0-9]*$ ]] || hdie "--port must be a positive integer, got '$SPARK_HISTORY_PORT'"
    [[ "$SPARK_HISTORY_HEAP" =~ ^[0-9]+[mMgG]$ ]] || hdie "SPARK_HISTORY_HEAP must look like 512m or 1g"
}

# history_spark_home: $SPARK_HOME, else the directory of the project's pyspark package (it ships bin/ and jars/).
history_spark_home() {
    if [ -n "${SPARK_HOME:-}" ]; then
        printf '%s\n' "$SPARK_HOME"
        return 0
    fi
    "$(project_python)" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null
}

# history_pid: the PID in RUN_DIR/history.pid if that process is alive and is the History Server (a stale PID may
# have been reused).
history_pid() {
    local pid
    pid="$(live_pid "$SPARK_HISTORY_RUN_DIR/history.pid")" || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'org.apache.spark.deploy.history.HistoryServer' || return 1
    printf '%s\n' "$pid"
}
