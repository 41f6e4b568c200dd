#!/usr/bin/env bash
# Stop the Alertmanager that start.sh started (by the PID file in the runtime dir; nothing else is touched): SIGTERM,
# SIGKILL after 20 s, or at once with --force.  Idempotent: nothing running is fine.  Silences and the notification
# log stay in RUN_DIR/data for the next start.
#
#   bash deploy/alertmanager/stop.sh [--run-dir DIR] [--force]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
alertmanager_parse_args "$@"

if ! pid="$(pid_of)"; then
    rm -f "$ALERTMANAGER_RUN_DIR/alertmanager.pid"
    asay "not running"
    exit 0
fi
if [ "$ALERTMANAGER_FORCE" = 1 ]; then
    kill -KILL "$pid" 2>/dev/null || true
else
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        asay "pid $pid still running after 20 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
fi
for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
rm -f "$ALERTMANAGER_RUN_DIR/alertmanager.pid"
asay "stopped (pid $pid; data kept in $ALERTMANAGER_RUN_DIR/data)"
