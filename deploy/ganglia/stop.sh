#!/usr/bin/env bash
# Stop the gmetad and gmond that start.sh started (by the PIDs in the runtime dir; nothing else is touched).
#
#   bash deploy/ganglia/stop.sh [--run-dir DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ganglia_parse_args "$@"

# Both get SIGTERM at once (each takes a second or two to exit); SIGKILL after 5 s.
pids=() names=()
for name in gmetad gmond; do
    if pid="$(pid_of "$name")"; then
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid") names+=("$name")
    else
        gsay "$name not running"
    fi
    rm -f "$GANGLIA_RUN_DIR/$name.pid"
done
for ((i = 0; i < 50; i++)); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
done
for j in "${!pids[@]}"; do
    if kill -0 "${pids[$j]}" 2>/dev/null; then
        gsay "${names[$j]} (pid ${pids[$j]}) ignored SIGTERM for 5 s: SIGKILL"
        kill -KILL "${pids[$j]}" 2>/dev/null || true
    fi
    gsay "stopped ${names[$j]} (pid ${pids[$j]})"
done
