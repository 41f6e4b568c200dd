# Shared settings for deploy/kafka/{install,start,stop,status}.sh: sourced, not run.
#
# Every setting is an environment variable with a default; the same can be given as a flag to any of the scripts:
#   --run-dir DIR       KAFKA_RUN_DIR     runtime dir: configs, data, logs, PID files   (default <repo>/.run/kafka)
#   --port N            KAFKA_PORT        broker listener on 127.0.0.1                 (default 9092)
#   --zk-port N         ZK_PORT           ZooKeeper client port on 127.0.0.1           (default 2181)
#   --kafka-home DIR    KAFKA_HOME        the unpacked Kafka 2.3.0 distribution         (default ~/.cache/hcep/kafka_2.12-2.3.0)
#   --partitions N      KAFKA_PARTITIONS  partitions of auto-created topics             (default 4)
#   ZK_HEAP / KAFKA_HEAP  JVM heaps (default 128m / 256m)
# Everything listens on 127.0.0.1 only.

KAFKA_DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$KAFKA_DEPLOY_DIR/../lib.sh"  # port_open, live_pid, apt_install_missing, project_python
KAFKA_REPO_ROOT="$(cd "$KAFKA_DEPLOY_DIR/../.." && pwd)"
KAFKA_VERSION_DIR="kafka_2.12-2.3.0"

ksay() { printf '==> kafka: %s\n' "$*" >&2; }
kdie() { printf 'kafka: error: %s\n' "$*" >&2; exit 1; }

kafka_parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --run-dir) KAFKA_RUN_DIR="${2:?--run-dir needs a value}"; shift 2 ;;
            --port) KAFKA_PORT="${2:?--port needs a value}"; shift 2 ;;
            --zk-port) ZK_PORT="${2:?--zk-port needs a value}"; shift 2 ;;
            --kafka-home) KAFKA_HOME="${2:?--kafka-home needs a value}"; shift 2 ;;
            --partitions) KAFKA_PARTITIONS="${2:?--partitions needs a value}"; shift 2 ;;
            --force) KAFKA_FORCE=1; shift ;;
            -h|--help) sed -n '2,11p' "$KAFKA_DEPLOY_DIR/common.sh" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) kdie "unknown argument: $1 (see --help)" ;;
        esac
    done
    KAFKA_RUN_DIR="${KAFKA_RUN_DIR:-$KAFKA_REPO_ROOT/.run/kafka}"
    case "$KAFKA_RUN_DIR" in /*) ;; *) KAFKA_RUN_DIR="$PWD/$KAFKA_RUN_DIR" ;; esac
    KAFKA_HOME="${KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/hcep/$KAFKA_VERSION_DIR}"
    KAFKA_PORT="${KAFKA_PORT:-9092}"
    ZK_PORT="${ZK_PORT:-2181}"
    KAFKA_PARTITIONS="${KAFKA_PARTITIONS:-4}"
    ZK_HEAP="${ZK_HEAP:-128m}"
    KAFKA_HEAP="${KAFKA_HEAP:-256m}"
    KAFKA_FORCE="${KAFKA_FORCE:-0}"
    local n
    for n in KAFKA_PORT ZK_PORT KAFKA_PARTITIONS; do
        [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || kdie "$n must be a positive integer, got '${!n}'"
    done
    [ "$KAFKA_PORT" != "$ZK_PORT" ] || kdie "the broker and ZooKeeper need different ports (both $KAFKA_PORT)"
    [[ "$ZK_HEAP$KAFKA_HEAP" =~ ^[0-9]+[mMgG][0-9]+[mMgG]$ ]] || kdie "heaps must look like 128m or 1g"
}

# pid_of NAME: the PID in RUN_DIR/NAME.pid if that process is alive and is that JVM (a stale PID may be reused).
pid_of() {
    local pid main
    pid="$(live_pid "$KAFKA_RUN_DIR/$1.pid")" || return 1
    case "$1" in zookeeper) main=QuorumPeerMain ;; *) main=kafka.Kafka ;; esac
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$main" || return 1
    printf '%s\n' "$pid"
}
