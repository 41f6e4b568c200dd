#!/usr/bin/env bash
# Start Spark's own History Server (the one the pyspark package ships) over an event-log directory, on loopback, as
# a background process with its PID file, log and properties in the runtime dir.  Idempotent: a running one with the
# same log directory and port is left alone (another log directory: stop it first).  hcep uses it as the oracle of
# its Spark collector (tests/collectors/spark/test_spark_history.py) and as a source (hcep collect spark
# --history-server URL).
#
#   bash deploy/spark/history-start.sh [--log-dir DIR] [--port N] [--run-dir DIR] [--spark-home DIR]
#
# Settings: see history-common.sh (or --help).  Prints URL=, PID=, LOG_DIR=, RUN_DIR= lines on stdout once its REST
# API answers.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/history-common.sh"
history_parse_args "$@"

command -v java >/dev/null 2>&1 || hdie "java not found (Spark needs a JDK 17+: apt-get install openjdk-17-jre-headless)"
SPARK_HOME="$(history_spark_home)" || true
[ -n "$SPARK_HOME" ] && [ -x "$SPARK_HOME/bin/spark-class" ] || hdie "no Spark distribution: install pyspark (deploy/install.sh) or give --spark-home"
export SPARK_HOME

RUN="$SPARK_HISTORY_RUN_DIR"
mkdir -p "$RUN/logs" "$SPARK_HISTORY_LOG_DIR"
URL="http://127.0.0.1:$SPARK_HISTORY_PORT"

answers() {  # the REST API answers with a JSON list
    curl -sf --max-time 5 "$URL/api/v1/applications?limit=1" 2>/dev/null | grep -q '^\['
}

if pid="$(history_pid)"; then
    conf="$(cat "$RUN/history.properties" 2>/dev/null || true)"
    grep -qxF "spark.history.fs.logDirectory file:$SPARK_HISTORY_LOG_DIR" <<<"$conf" \
        && grep -qxF "spark.history.ui.port $SPARK_HISTORY_PORT" <<<"$conf" \
        || hdie "a History Server already runs from $RUN (pid $pid) with other settings: stop it first (history-stop.sh)"
    hsay "already running (pid $pid)"
else
    port_open "$SPARK_HISTORY_PORT" && hdie "127.0.0.1:$SPARK_HISTORY_PORT is taken by another process (choose --port)"
    cat >"$RUN/history.properties.tmp" <<PROPS
spark.history.fs.logDirectory file:$SPARK_HISTORY_LOG_DIR
spark.history.ui.port $SPARK_HISTORY_PORT
spark.history.fs.update.interval 1s
spark.history.fs.cleaner.enabled false
spark.history.fs.eventLog.rolling.maxFilesToRetain 2147483647
spark.ui.showConsoleProgress false
PROPS
    mv "$RUN/history.properties.tmp" "$RUN/history.properties"
    hsay "starting on 127.0.0.1:$SPARK_HISTORY_PORT over $SPARK_HISTORY_LOG_DIR (heap $SPARK_HISTORY_HEAP)"
    rm -f "$RUN/history.pid"
    # spark-class ends in `exec java`, and setsid/nohup exec too, so $! becomes the JVM's PID.  SPARK_LOCAL_IP binds
    # the web server to loopback; SPARK_CONF_DIR keeps a spark-defaults.conf elsewhere from changing anything.
    SPARK_LOCAL_IP=127.0.0.1 SPARK_CONF_DIR="$RUN" SPARK_DAEMON_MEMORY="$SPARK_HISTORY_HEAP" SPARK_NO_DAEMONIZE=1 \
        nohup setsid "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.history.HistoryServer \
        --properties-file "$RUN/history.properties" >>"$RUN/logs/history.out" 2>&1 </dev/null &
    echo $! >"$RUN/history.pid"
fi

# A JVM start on a loaded machine takes a while: wait up to SPARK_HISTORY_WAIT seconds (default 300).
deadline=$((SECONDS + ${SPARK_HISTORY_WAIT:-300}))
i=0
while [ "$SECONDS" -lt "$deadline" ]; do
    answers && break
    if ! history_pid >/dev/null && [ "$i" -gt 10 ]; then
        tail -n 30 "$RUN/logs/history.out" >&2 || true
        hdie "the History Server exited (log: $RUN/logs/history.out)"
    fi
    i=$((i + 1))
    sleep 0.2
done
answers || { tail -n 30 "$RUN/logs/history.out" >&2 || true; hdie "no answer on $URL after ${SPARK_HISTORY_WAIT:-300} s (log: $RUN/logs/history.out)"; }

pid="$(history_pid)"
if command -v ss >/dev/null 2>&1; then  # refuse to leave it listening beyond loopback
    bad="$(ss -H -ltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | grep -vE '^(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' || true)"
    if [ -n "$bad" ]; then
        kill -9 "$pid" 2>/dev/null || true
        hdie "the History Server listened beyond loopback ($(echo $bad)): killed it"
    fi
fi

cat <<OUT
URL=$URL
PID=$pid
LOG_DIR=$SPARK_HISTORY_LOG_DIR
RUN_DIR=$RUN
SPARK_HOME=$SPARK_HOME
OUT
