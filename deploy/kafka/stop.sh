#!/usr/bin/env bash
# Stop the hcep Kafka broker, then its ZooKeeper (SIGTERM: the broker shuts down cleanly; SIGKILL after 30 s, or at
# once with --force).  Idempotent: nothing running is fine.  Data stays in the runtime dir for the next start.
#
#   bash deploy/kafka/stop.sh [--run-dir DIR] [--force]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kafka_parse_args "$@"

stop_one() {  # stop_one NAME
    local pid i
    if ! pid="$(pid_of "$1")"; then
        rm -f "$KAFKA_RUN_DIR/$1.pid"
        return 0
    fi
    if [ "$KAFKA_FORCE" = 1 ]; then
        kill -9 "$pid" 2>/dev/null || true
    else
        ksay "stopping $1 (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            ksay "$1 still running after 30 s: SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    rm -f "$KAFKA_RUN_DIR/$1.pid"
}

stop_one kafka
stop_one zookeeper
ksay "stopped (data kept in $KAFKA_RUN_DIR/data)"
