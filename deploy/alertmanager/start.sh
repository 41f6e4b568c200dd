#!/usr/bin/env bash
# Start Prometheus Alertmanager for hcep on loopback, in the foreground of a background process (no systemd, no
# daemonizing), with its config, data (silences, notification log), log and PID file in the runtime dir.  Idempotent:
# a running Alertmanager is left running, and reloaded (POST /-/reload) when its rendered config changed (say, another
# --receiver-url).  Installs the Debian package first when it is missing (deploy/alertmanager/install.sh).
#
#   bash deploy/alertmanager/start.sh [--run-dir DIR] [--port N] [--receiver-url URL] [--group-by LABELS]
#                                     [--group-wait DUR] [--group-interval DUR] [--repeat-interval DUR]
#
# Settings: see common.sh (or --help).  The HTTP API listens on 127.0.0.1:PORT only; the HA cluster listener is off
# (--cluster.listen-address= ).  Waits until GET /-/ready answers 200, then prints KEY=VALUE lines on stdout.
# With ALERTMANAGER_OWNER_PID set, a watcher stops Alertmanager once that process has exited (test fixtures use it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
alertmanager_parse_args "$@"

[ -x "$AM_BIN" ] || bash "$AM_DEPLOY_DIR/install.sh" >&2
[ -x "$AM_BIN" ] || adie "$AM_BIN not found: run 'bash deploy/alertmanager/install.sh'"

RUN="$ALERTMANAGER_RUN_DIR"
CONFIG="$RUN/alertmanager.yml"
LOG="$RUN/alertmanager.log"
mkdir -p "$RUN/data"

check_config() {  # check_config FILE: amtool's verdict, when amtool is there (Alertmanager itself would only log it)
    [ -x "$AM_TOOL" ] || return 0
    local out
    out="$("$AM_TOOL" check-config "$1" 2>&1)" \
        || { printf '%s\n' "$out" >&2; rm -f "$1"; adie "invalid config rendered from alertmanager.yml.tmpl"; }
}

wait_ready() {  # wait_ready SECONDS: GET /-/ready answers 200
    local limit=$(( $1 * 10 )) i
    for ((i = 0; i < limit; i++)); do
        http_ok /-/ready && return 0
        if ! pid_of >/dev/null && [ "$i" -gt 5 ]; then
            tail -n 20 "$LOG" >&2 || true
            adie "Alertmanager exited (log: $LOG)"
        fi
        sleep 0.1
    done
    tail -n 20 "$LOG" >&2 || true
    adie "Alertmanager not ready on 127.0.0.1:$ALERTMANAGER_PORT after $1 s (log: $LOG)"
}

check_loopback() {  # check_loopback PID: refuse to leave Alertmanager listening beyond loopback
    command -v ss >/dev/null 2>&1 || return 0
    local bad loopback='^(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$'
    bad="$(ss -H -ltunp 2>/dev/null | grep "pid=$1," | awk '{print $5}' | grep -vE "$loopback" || true)"
    if [ -n "$bad" ]; then
        kill -9 "$1" 2>/dev/null || true
        adie "Alertmanager listened beyond loopback ($(echo $bad)): killed it"
    fi
}

render_config >"$CONFIG.new"
check_config "$CONFIG.new"

if pid="$(pid_of)"; then
    tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "--web.listen-address=127.0.0.1:$ALERTMANAGER_PORT" \
        || { rm -f "$CONFIG.new"; adie "Alertmanager (pid $pid) runs on $RUN with another port: stop.sh it first"; }
    if cmp -s "$CONFIG.new" "$CONFIG"; then
        rm -f "$CONFIG.new"
        asay "already running (pid $pid)"
    else
        mv "$CONFIG.new" "$CONFIG"
        asay "already running (pid $pid): config changed, reloading"
        # POST /-/reload (not SIGHUP): it returns once the new config is in force, so the caller's next alert is
        # routed by it.
        http_ok POST /-/reload || { tail -n 5 "$LOG" >&2; adie "reloading the config failed (log: $LOG)"; }
    fi
    wait_ready 30
else
    mv "$CONFIG.new" "$CONFIG"
    port_open "$ALERTMANAGER_PORT" && adie "127.0.0.1:$ALERTMANAGER_PORT is taken by another process (use --port)"
    asay "starting Alertmanager on 127.0.0.1:$ALERTMANAGER_PORT, notifying $ALERTMANAGER_RECEIVER_URL"
    rm -f "$RUN/alertmanager.pid"
    # setsid and nohup exec, so $! is Alertmanager's own PID.
    nohup setsid "$AM_BIN" \
        --config.file="$CONFIG" \
        --storage.path="$RUN/data" \
        --web.listen-address="127.0.0.1:$ALERTMANAGER_PORT" \
        --web.external-url="http://127.0.0.1:$ALERTMANAGER_PORT" \
        --cluster.listen-address= \
        --log.level=info \
        >>"$LOG" 2>&1 </dev/null &
    echo $! >"$RUN/alertmanager.pid"
    wait_ready 30
fi
PID="$(pid_of)" || adie "Alertmanager exited (log: $LOG)"
check_loopback "$PID"

# ALERTMANAGER_OWNER_PID (tests): stop Alertmanager when that process is gone, even if it died without cleaning up.
if [ -n "${ALERTMANAGER_OWNER_PID:-}" ]; then
    nohup setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2/stop.sh" --run-dir "$3"' \
        _ "$ALERTMANAGER_OWNER_PID" "$AM_DEPLOY_DIR" "$RUN" >>"$RUN/watch.log" 2>&1 </dev/null &
fi

cat <<OUT
ALERTMANAGER_URL=http://127.0.0.1:$ALERTMANAGER_PORT
ALERTMANAGER_PID=$PID
RECEIVER_URL=$ALERTMANAGER_RECEIVER_URL
RUN_DIR=$RUN
OUT
