#!/usr/bin/env bash
# Start a Spark standalone cluster on loopback: a master on 127.0.0.1:PORT and N workers (default 2, 1 core and 1g
# each), from the pyspark distribution in the project's Python, as background JVMs with PID files and logs in the
# run dir.  Idempotent: a running master or worker is left alone (a killed worker is started again).
#
#   bash deploy/spark/cluster-start.sh [--run-dir DIR] [--port N] [--webui-port N] [--workers N] [--cores N] [--memory M]
#
# Prints MASTER=spark://127.0.0.1:PORT and the PIDs as KEY=VALUE lines on stdout once every worker has registered.
# Settings: deploy/spark/cluster-common.sh (or --help).  Stop with deploy/spark/cluster-stop.sh (same --run-dir).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"
cluster_parse_args "$@"
command -v java >/dev/null 2>&1 || cdie "java not found (Spark needs a JDK 17+: bash deploy/install.sh)"

export SPARK_HOME
SPARK_HOME="$(spark_home)"
RUN="$SPARK_CLUSTER_RUN_DIR"
mkdir -p "$RUN/logs"
export SPARK_LOG_DIR="$RUN/logs" SPARK_PID_DIR="$RUN"
PY="$(project_python)"
# The executors' Python workers: the project's Python (a job's spark.pyspark.python overrides it).
export PYSPARK_PYTHON="$PY"
MASTER_URL="spark://127.0.0.1:$SPARK_CLUSTER_PORT"

start_daemon() {  # start_daemon NAME CLASS ARGS...: spark-class in its own session (spark-class execs java: $! is the JVM)
    local name="$1"
    shift
    rm -f "$RUN/$name.pid"
    nohup setsid "$SPARK_HOME/bin/spark-class" "$@" >>"$RUN/logs/$name.out" 2>&1 </dev/null &
    echo $! >"$RUN/$name.pid"
}

wait_for() {  # wait_for NAME SECONDS COMMAND...: until COMMAND succeeds; the daemon must stay alive
    local name="$1" limit=$(( $2 * 10 )) i
    shift 2
    for ((i = 0; i < limit; i++)); do
        "$@" && return 0
        if ! cluster_pid "$name" >/dev/null && [ "$i" -gt 5 ]; then
            tail -n 30 "$RUN/logs/$name.out" >&2 || true
            cdie "$name exited (log: $RUN/logs/$name.out)"
        fi
        sleep 0.1
    done
    tail -n 30 "$RUN/logs/$name.out" >&2 || true
    cdie "$name not ready after $2 s (log: $RUN/logs/$name.out)"
}

check_loopback() {  # check_loopback NAME PID: refuse to leave a daemon listening beyond loopback
    command -v ss >/dev/null 2>&1 || return 0
    local bad
    bad="$(ss -H -ltnp 2>/dev/null | grep "pid=$2," | awk '{print $4}' | grep -vE '^(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' || true)"
    if [ -n "$bad" ]; then
        kill -9 "$2" 2>/dev/null || true
        cdie "$1 listened beyond loopback ($(echo $bad)): killed it"
    fi
}

registered() {  # registered NAME: the worker's log says it registered with the master (this run's lines)
    tail -n +"$(( ${MARK[$1]} + 1 ))" "$RUN/logs/$1.out" 2>/dev/null | grep -q "Successfully registered with master"
}

if pid="$(cluster_pid master)"; then
    csay "master already running (pid $pid)"
else
    port_open "$SPARK_CLUSTER_PORT" && cdie "127.0.0.1:$SPARK_CLUSTER_PORT is taken by another process (choose --port)"
    csay "starting the master on $MASTER_URL (UI 127.0.0.1:$SPARK_CLUSTER_UI_PORT)"
    start_daemon master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$SPARK_CLUSTER_PORT" \
        --webui-port "$SPARK_CLUSTER_UI_PORT"
fi
wait_for master 60 port_open "$SPARK_CLUSTER_PORT"
check_loopback master "$(cluster_pid master)"

declare -A MARK
started=()
for ((i = 1; i <= SPARK_CLUSTER_WORKERS; i++)); do
    name="worker-$i"
    if pid="$(cluster_pid "$name")"; then
        csay "$name already running (pid $pid)"
        continue
    fi
    mkdir -p "$RUN/$name"
    MARK[$name]="$( (wc -l <"$RUN/logs/$name.out") 2>/dev/null || echo 0)"
    csay "starting $name ($SPARK_CLUSTER_CORES core(s), $SPARK_CLUSTER_MEMORY)"
    start_daemon "$name" org.apache.spark.deploy.worker.Worker "$MASTER_URL" --host 127.0.0.1 \
        --webui-port "$(( SPARK_CLUSTER_UI_PORT ? SPARK_CLUSTER_UI_PORT + i : 0 ))" --cores "$SPARK_CLUSTER_CORES" \
        --memory "$SPARK_CLUSTER_MEMORY" --work-dir "$RUN/$name"
    started+=("$name")
done
for name in "${started[@]}"; do
    wait_for "$name" 90 registered "$name"
    check_loopback "$name" "$(cluster_pid "$name")"
done

echo "MASTER=$MASTER_URL"
echo "MASTER_PID=$(cluster_pid master)"
for ((i = 1; i <= SPARK_CLUSTER_WORKERS; i++)); do
    echo "WORKER_${i}_PID=$(cluster_pid "worker-$i")"
done
echo "RUN_DIR=$RUN"
echo "SPARK_HOME=$SPARK_HOME"
