# Shared settings for deploy/spark/cluster-{start,stop,status}.sh: sourced, not run.
#
# A Spark standalone cluster on one machine, loopback only: one master and N workers from the pyspark distribution
# in the project's Python (its bin/spark-class), each a background JVM with a PID file and a log in the run dir.
# Every setting is an environment variable with a default; the same can be given as a flag:
#   --run-dir DIR        SPARK_CLUSTER_RUN_DIR   PID files, logs, the workers' dirs   (default <repo>/.run/spark-cluster)
#   --port N             SPARK_CLUSTER_PORT      the master's port on 127.0.0.1       (default 7077)
#   --webui-port N       SPARK_CLUSTER_UI_PORT   the master's UI; workers take N+1..  (default 8180; 0: any free)
#   --workers N          SPARK_CLUSTER_WORKERS   workers                              (default 2)
#   --cores N            SPARK_CLUSTER_CORES     cores per worker                     (default 1)
#   --memory M           SPARK_CLUSTER_MEMORY    memory per worker                    (default 1g)
#   --force              (stop) SIGKILL at once
# The master URL is spark://127.0.0.1:PORT; hcep stream --master spark://127.0.0.1:PORT runs there.

SPARK_CLUSTER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$SPARK_CLUSTER_DIR/../lib.sh"  # port_open, live_pid, project_python

csay() { printf '==> spark cluster: %s\n' "$*" >&2; }
cdie() { printf 'spark cluster: error: %s\n' "$*" >&2; exit 1; }

cluster_parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --run-dir) SPARK_CLUSTER_RUN_DIR="${2:?--run-dir needs a value}"; shift 2 ;;
            --port) SPARK_CLUSTER_PORT="${2:?--port needs a value}"; shift 2 ;;
            --webui-port) SPARK_CLUSTER_UI_PORT="${2:?--webui-port needs a value}"; shift 2 ;;
            --workers) SPARK_CLUSTER_WORKERS="${2:?--workers needs a value}"; shift 2 ;;
            --cores) SPARK_CLUSTER_CORES="${2:?--cores needs a value}"; shift 2 ;;
            --memory) SPARK_CLUSTER_MEMORY="${2:?--memory needs a value}"; shift 2 ;;
            --force) SPARK_CLUSTER_FORCE=1; shift ;;
            -h|--help) sed -n '2,14p' "$SPARK_CLUSTER_DIR/cluster-common.sh" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) cdie "unknown argument: $1 (see --help)" ;;
        esac
    done
    SPARK_CLUSTER_RUN_DIR="${SPARK_CLUSTER_RUN_DIR:-$HCEP_REPO_ROOT/.run/spark-cluster}"
    case "$SPARK_CLUSTER_RUN_DIR" in /*) ;; *) SPARK_CLUSTER_RUN_DIR="$PWD/$SPARK_CLUSTER_RUN_DIR" ;; esac
    SPARK_CLUSTER_PORT="${SPARK_CLUSTER_PORT:-7077}"
    SPARK_CLUSTER_UI_PORT="${SPARK_CLUSTER_UI_PORT:-8180}"
    SPARK_CLUSTER_WORKERS="${SPARK_CLUSTER_WORKERS:-2}"
    SPARK_CLUSTER_CORES="${SPARK_CLUSTER_CORES:-1}"
    SPARK_CLUSTER_MEMORY="${SPARK_CLUSTER_MEMORY:-1g}"
    SPARK_CLUSTER_FORCE="${SPARK_CLUSTER_FORCE:-0}"
    local n
    [[ "$SPARK_CLUSTER_UI_PORT" =~ ^[0-9]+$ ]] || cdie "--webui-port must be a port number, got '$SPARK_CLUSTER_UI_PORT'"
    for n in SPARK_CLUSTER_PORT SPARK_CLUSTER_WORKERS SPARK_CLUSTER_CORES; do
        [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || cdie "$n must be a positive integer, got '${!n}'"
    done
    [[ "$SPARK_CLUSTER_MEMORY" =~ ^[0-9]+[mMgG]$ ]] || cdie "--memory must look like 512m or 1g"
    # Loopback only: every daemon binds 127.0.0.1 (and the UIs with it).
    export SPARK_LOCAL_IP=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1 SPARK_LOCAL_HOSTNAME=localhost
    export SPARK_NO_DAEMONIZE=1
    # No REST submission server (it would take port 6066 whatever --port says).
    export SPARK_MASTER_OPTS="${SPARK_MASTER_OPTS:-} -Dspark.master.rest.enabled=false"
}

# spark_home: the pyspark distribution of the project's Python (it carries bin/spark-class and the jars).
spark_home() {
    local py
    py="$(project_python)"
    "$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null \
        || cdie "no pyspark in $py: run 'bash deploy/install.sh'"
}

# cluster_pid NAME: the PID in RUN_DIR/NAME.pid if that process is alive and is that daemon (master, worker-N).
cluster_pid() {
    local pid main
    pid="$(live_pid "$SPARK_CLUSTER_RUN_DIR/$1.pid")" || return 1
    case "$1" in master) main=org.apache.spark.deploy.master.Master ;; *) main=org.apache.spark.deploy.worker.Worker ;; esac
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$main" || return 1
    printf '%s\n' "$pid"
}

# cluster_names: master, then the workers (worker-1 .. worker-N) that have PID files or are configured.
cluster_names() {
    local i names="master" f
    for ((i = 1; i <= SPARK_CLUSTER_WORKERS; i++)); do names="$names worker-$i"; done
    for f in "$SPARK_CLUSTER_RUN_DIR"/worker-*.pid; do
        [ -e "$f" ] || continue
        f="$(basename "$f" .pid)"
        case " $names " in *" $f "*) ;; *) names="$names $f" ;; esac
    done
    printf '%s\n' $names
}
