#!/usr/bin/env bash
# Start gmond and gmetad for hcep on loopback, in the foreground of background processes (no systemd, no daemonizing),
# with PID files, logs, generated configs and RRDs in the runtime dir.  Idempotent: a running daemon is left alone.
#
#   bash deploy/ganglia/start.sh [--run-dir DIR] [--gmond-port N] [--xml-port N] [--interactive-port N] ...
#
# Settings: see common.sh (or --help).  Prints the endpoints as KEY=VALUE lines on stdout when both are up.
# With GANGLIA_OWNER_PID set, a watcher stops both daemons once that process has exited (the test fixture uses it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ganglia_parse_args "$@"

for bin in gmond gmetad; do
    command -v "$bin" >/dev/null 2>&1 || gdie "$bin not found: run 'bash deploy/ganglia/install.sh' first"
done

RUN="$GANGLIA_RUN_DIR"
mkdir -p "$RUN" "$GANGLIA_RRD_ROOTDIR"

module_dir() {
    local so
    for so in /usr/lib/*/ganglia/modcpu.so /usr/lib64/ganglia/modcpu.so /usr/lib/ganglia/modcpu.so; do
        [ -f "$so" ] && { dirname "$so"; return 0; }
    done
    gdie "gmond's modules (modcpu.so) not found: is ganglia-monitor installed?"
}

render() {  # render TEMPLATE OUT: replace @NAME@ placeholders; the values were validated by ganglia_parse_args
    sed -e "s|@CLUSTER@|$GANGLIA_CLUSTER|g" \
        -e "s|@GRIDNAME@|$GANGLIA_CLUSTER-grid|g" \
        -e "s|@GMOND_PORT@|$GMOND_PORT|g" \
        -e "s|@GMOND_UDP_PORT@|$GMOND_PORT|g" \
        -e "s|@XML_PORT@|$GMETAD_XML_PORT|g" \
        -e "s|@INTERACTIVE_PORT@|$GMETAD_INTERACTIVE_PORT|g" \
        -e "s|@COLLECT_EVERY@|$GANGLIA_COLLECT_EVERY|g" \
        -e "s|@SEND_METADATA_INTERVAL@|$(( GANGLIA_COLLECT_EVERY > 15 ? GANGLIA_COLLECT_EVERY : 15 ))|g" \
        -e "s|@POLL_INTERVAL@|$GANGLIA_POLL_INTERVAL|g" \
        -e "s|@RRD_ROOTDIR@|$GANGLIA_RRD_ROOTDIR|g" \
        -e "s|@MODULE_DIR@|$MODULE_DIR|g" \
        -e "s|@MUTE@|$GANGLIA_MUTE|g" \
        "$1" >"$2.tmp"
    mv "$2.tmp" "$2"
}

build_shim() {  # the LD_PRELOAD shim that keeps gmetad's wildcard binds on loopback (see loopback_bind.c)
    local src="$GANGLIA_DEPLOY_DIR/loopback_bind.c" so="$RUN/loopback_bind.so" cc
    if [ -f "$so" ] && [ "$so" -nt "$src" ]; then return 0; fi
    cc="$(command -v cc || command -v gcc || true)"
    [ -n "$cc" ] || gdie "no C compiler to build loopback_bind.so (gmetad would listen on 0.0.0.0): install gcc"
    "$cc" -shared -fPIC -O2 -o "$so.tmp" "$src" -ldl
    mv "$so.tmp" "$so"
}

wait_port() {  # wait_port NAME PORT: up to 15 s for the daemon to accept connections
    local i
    for ((i = 0; i < 150; i++)); do
        port_open "$2" && return 0
        pid_of "$1" >/dev/null || [ $i -lt 10 ] || { tail -n 20 "$RUN/$1.log" >&2 || true; gdie "$1 exited (log: $RUN/$1.log)"; }
        sleep 0.1
    done
    tail -n 20 "$RUN/$1.log" >&2 || true
    gdie "$1 does not answer on 127.0.0.1:$2 after 15 s (log: $RUN/$1.log)"
}

check_loopback() {  # check_loopback NAME PID: refuse to leave a daemon listening beyond loopback
    command -v ss >/dev/null 2>&1 || return 0
    local bad
    bad="$(ss -H -ltunp 2>/dev/null | grep "pid=$2," | awk '{print $5}' | grep -vE '^(127\.[0-9.]+|\[::1\]):[0-9]+$' || true)"
    if [ -n "$bad" ]; then
        kill "$2" 2>/dev/null || true
        gdie "$1 listened beyond loopback ($bad): stopped it"
    fi
}

start_daemon() {  # start_daemon NAME ARGS...: run NAME in the background, its own session, output to NAME.log
    local name="$1"; shift
    rm -f "$RUN/$name.pid"
    LD_PRELOAD="$RUN/loopback_bind.so" nohup setsid "$@" >>"$RUN/$name.log" 2>&1 </dev/null &
    local launcher=$!
    local i
    for ((i = 0; i < 100; i++)); do  # the daemon writes its own PID file (-p)
        pid_of "$name" >/dev/null && return 0
        kill -0 "$launcher" 2>/dev/null || break
        sleep 0.05
    done
    pid_of "$name" >/dev/null || { echo "$launcher" >"$RUN/$name.pid"; }
}

MODULE_DIR="$(module_dir)"
render "$GANGLIA_DEPLOY_DIR/gmond.conf.tmpl" "$RUN/gmond.conf"
render "$GANGLIA_DEPLOY_DIR/gmetad.conf.tmpl" "$RUN/gmetad.conf"
build_shim

if pid="$(pid_of gmond)"; then
    gsay "gmond already running (pid $pid)"
else
    muted=""; [ "$GANGLIA_MUTE" = no ] || muted=" (mute: only gmetric's hosts)"
    gsay "starting gmond on 127.0.0.1:$GMOND_PORT (tcp+udp), cluster '$GANGLIA_CLUSTER'$muted"
    start_daemon gmond "$(command -v gmond)" -f -c "$RUN/gmond.conf" -p "$RUN/gmond.pid"
fi
wait_port gmond "$GMOND_PORT"
check_loopback gmond "$(pid_of gmond)"

if pid="$(pid_of gmetad)"; then
    gsay "gmetad already running (pid $pid)"
else
    gsay "starting gmetad on 127.0.0.1:$GMETAD_XML_PORT (xml) and :$GMETAD_INTERACTIVE_PORT (interactive)"
    start_daemon gmetad "$(command -v gmetad)" -d 1 -c "$RUN/gmetad.conf" -p "$RUN/gmetad.pid"
fi
wait_port gmetad "$GMETAD_XML_PORT"
check_loopback gmetad "$(pid_of gmetad)"

# GANGLIA_OWNER_PID (tests): stop the daemons when that process is gone, even if it died without cleaning up.
if [ -n "${GANGLIA_OWNER_PID:-}" ]; then
    nohup setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2/stop.sh" --run-dir "$3"' \
        _ "$GANGLIA_OWNER_PID" "$GANGLIA_DEPLOY_DIR" "$RUN" >>"$RUN/watch.log" 2>&1 </dev/null &
fi

cat <<OUT
GMOND=127.0.0.1:$GMOND_PORT
GMETAD=127.0.0.1:$GMETAD_XML_PORT
GMETAD_INTERACTIVE=127.0.0.1:$GMETAD_INTERACTIVE_PORT
GMOND_PID=$(pid_of gmond)
GMETAD_PID=$(pid_of gmetad)
RRD_ROOTDIR=$GANGLIA_RRD_ROOTDIR
RUN_DIR=$RUN
CLUSTER=$GANGLIA_CLUSTER
OUT
