#!/usr/bin/env bash
# Is the hcep Alertmanager up?  KEY=VALUE lines on stdout; exit 0 when it runs and GET /-/ready answers 200, 3
# otherwise (the LSB "not running" status).
#
#   bash deploy/alertmanager/status.sh [--run-dir DIR] [--port N]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
alertmanager_parse_args "$@"

rc=0
if pid="$(pid_of)"; then
    if http_ok /-/ready; then
        echo "ALERTMANAGER=running pid=$pid addr=127.0.0.1:$ALERTMANAGER_PORT"
    else
        echo "ALERTMANAGER=starting pid=$pid addr=127.0.0.1:$ALERTMANAGER_PORT"; rc=3
    fi
else
    echo "ALERTMANAGER=stopped"; rc=3
fi
echo "RUN_DIR=$ALERTMANAGER_RUN_DIR"
exit "$rc"
