#!/usr/bin/env bash
# Is the hcep Kafka broker up?  One KEY=VALUE line per part on stdout; exit 0 when ZooKeeper and the broker both
# run and answer on their ports, 3 otherwise.
#
#   bash deploy/kafka/status.sh [--run-dir DIR] [--port N] [--zk-port N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kafka_parse_args "$@"

state() {  # state NAME PORT
    local pid
    if pid="$(pid_of "$1")"; then
        if port_open "$2"; then echo "running pid=$pid addr=127.0.0.1:$2"; return 0; fi
        echo "starting pid=$pid addr=127.0.0.1:$2"; return 1
    fi
    echo "stopped"; return 1
}

rc=0
echo "ZOOKEEPER=$(state zookeeper "$ZK_PORT")" || rc=3
echo "KAFKA=$(state kafka "$KAFKA_PORT")" || rc=3
state zookeeper "$ZK_PORT" >/dev/null && state kafka "$KAFKA_PORT" >/dev/null || rc=3
echo "RUN_DIR=$KAFKA_RUN_DIR"
exit "$rc"
