#!/usr/bin/env bash
# Stop the Spark standalone cluster of deploy/spark/cluster-start.sh: the workers (and the executors they launched),
# then the master (SIGTERM; SIGKILL after 30 s, or at once with --force).  Idempotent: nothing running is fine.
#
#   bash deploy/spark/cluster-stop.sh [--run-dir DIR] [--force]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"
cluster_parse_args "$@"

children() {  # children PID: the PIDs of PID's child processes (a worker's executors)
    local f
    for f in /proc/[0-9]*/stat; do
        awk -v p="$1" '{ if ($4 == p) print $1 }' "$f" 2>/dev/null || true
    done
}

stop_one() {  # stop_one NAME
    local pid i kids
    if ! pid="$(cluster_pid "$1")"; then
        rm -f "$SPARK_CLUSTER_RUN_DIR/$1.pid"
        return 0
    fi
    kids="$(children "$pid" | tr '\n' ' ')"
    if [ "$SPARK_CLUSTER_FORCE" = 1 ]; then
        kill -9 "$pid" $kids 2>/dev/null || true
    else
        csay "stopping $1 (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            csay "$1 still running after 30 s: SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    # A worker kills its executors as it stops; one that outlived it is killed here.
    for i in $kids; do kill -9 "$i" 2>/dev/null || true; done
    rm -f "$SPARK_CLUSTER_RUN_DIR/$1.pid"
}

for name in $(cluster_names | grep -v '^master$'); do stop_one "$name"; done
stop_one master
csay "stopped (logs kept in $SPARK_CLUSTER_RUN_DIR/logs)"
