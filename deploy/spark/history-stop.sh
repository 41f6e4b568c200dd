#!/usr/bin/env bash
# Stop the History Server that history-start.sh started from this runtime dir (SIGTERM; SIGKILL after 30 s, or at
# once with --force).  Idempotent: nothing running is fine.  The event logs are not touched.
#
#   bash deploy/spark/history-stop.sh [--run-dir DIR] [--force]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/history-common.sh"
history_parse_args "$@"

if ! pid="$(history_pid)"; then
    rm -f "$SPARK_HISTORY_RUN_DIR/history.pid"
    exit 0
fi
if [ "$SPARK_HISTORY_FORCE" = 1 ]; then
    kill -9 "$pid" 2>/dev/null || true
else
    hsay "stopping (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        hsay "still running after 30 s: SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
    fi
fi
for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
rm -f "$SPARK_HISTORY_RUN_DIR/history.pid"
hsay "stopped"
