#!/usr/bin/env bash
# Start ZooKeeper and one Kafka broker for hcep on loopback, as background processes with PID files, logs, configs
# and data in the runtime dir.  Idempotent: a running ZooKeeper or broker is left alone.  Installs Kafka first when
# it is missing (deploy/kafka/install.sh).
#
#   bash deploy/kafka/start.sh [--run-dir DIR] [--port N] [--zk-port N] [--partitions N] [--kafka-home DIR]
#
# Settings: see common.sh (or --help).  Prints the endpoints as KEY=VALUE lines on stdout once the broker is ready.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kafka_parse_args "$@"

[ -f "$KAFKA_HOME/.hcep-installed" ] || KAFKA_HOME="$KAFKA_HOME" bash "$KAFKA_DEPLOY_DIR/install.sh" >/dev/null
command -v java >/dev/null 2>&1 || kdie "java not found: run 'bash deploy/kafka/install.sh'"

RUN="$KAFKA_RUN_DIR"
mkdir -p "$RUN/data/zookeeper" "$RUN/data/kafka" "$RUN/logs"

render() {  # render TEMPLATE OUT: replace @NAME@ placeholders; the values were validated by kafka_parse_args
    sed -e "s|@RUN_DIR@|$RUN|g" -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" -e "s|@ZK_PORT@|$ZK_PORT|g" \
        -e "s|@PARTITIONS@|$KAFKA_PARTITIONS|g" "$1" >"$2.tmp"
    mv "$2.tmp" "$2"
}

start_jvm() {  # start_jvm NAME HEAP SCRIPT CONFIG: the Kafka launcher in its own session, output to NAME.out
    local name="$1" heap="$2" script="$3" config="$4"
    rm -f "$RUN/$name.pid"
    # kafka-run-class.sh ends in `exec java`, and setsid/nohup exec too, so $! becomes the JVM's PID.
    LOG_DIR="$RUN/logs" KAFKA_HEAP_OPTS="-Xms$heap -Xmx$heap" KAFKA_JMX_OPTS=" " JMX_PORT="" \
        KAFKA_LOG4J_OPTS="-Dlog4j.configuration=file:$KAFKA_HOME/config/log4j.properties" \
        nohup setsid "$KAFKA_HOME/bin/$script" "$config" >>"$RUN/logs/$name.out" 2>&1 </dev/null &
    echo $! >"$RUN/$name.pid"
}

wait_ready() {  # wait_ready NAME PORT SECONDS [LOG PATTERN]: the port answers (and the log shows PATTERN)
    local name="$1" port="$2" limit=$(( $3 * 10 )) log="${4:-}" pattern="${5:-}" i
    for ((i = 0; i < limit; i++)); do
        if port_open "$port" && { [ -z "$pattern" ] || grep -q "$pattern" "$log" 2>/dev/null; }; then
            return 0
        fi
        if ! pid_of "$name" >/dev/null && [ "$i" -gt 5 ]; then
            tail -n 30 "$RUN/logs/$name.out" >&2 || true
            kdie "$name exited (log: $RUN/logs/$name.out)"
        fi
        sleep 0.1
    done
    tail -n 30 "$RUN/logs/$name.out" >&2 || true
    kdie "$name not ready on 127.0.0.1:$port after $3 s (log: $RUN/logs/$name.out)"
}

check_loopback() {  # check_loopback NAME PID: refuse to leave a JVM listening beyond loopback
    command -v ss >/dev/null 2>&1 || return 0
    local bad
    bad="$(ss -H -ltnp 2>/dev/null | grep "pid=$2," | awk '{print $4}' | grep -vE '^(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' || true)"
    if [ -n "$bad" ]; then
        kill -9 "$2" 2>/dev/null || true
        kdie "$1 listened beyond loopback ($(echo $bad)): killed it"
    fi
}

render "$KAFKA_DEPLOY_DIR/zookeeper.properties.tmpl" "$RUN/zookeeper.properties"
render "$KAFKA_DEPLOY_DIR/server.properties.tmpl" "$RUN/server.properties"

if pid="$(pid_of zookeeper)"; then
    ksay "ZooKeeper already running (pid $pid)"
else
    port_open "$ZK_PORT" && kdie "127.0.0.1:$ZK_PORT is taken by another process (choose --zk-port)"
    ksay "starting ZooKeeper on 127.0.0.1:$ZK_PORT (heap $ZK_HEAP)"
    start_jvm zookeeper "$ZK_HEAP" zookeeper-server-start.sh "$RUN/zookeeper.properties"
fi
wait_ready zookeeper "$ZK_PORT" 30
check_loopback zookeeper "$(pid_of zookeeper)"

if pid="$(pid_of kafka)"; then
    ksay "broker already running (pid $pid)"
    wait_ready kafka "$KAFKA_PORT" 60
else
    port_open "$KAFKA_PORT" && kdie "127.0.0.1:$KAFKA_PORT is taken by another process (choose --port)"
    ksay "starting the Kafka broker on 127.0.0.1:$KAFKA_PORT (heap $KAFKA_HEAP)"
    mark="$( (wc -l <"$RUN/logs/kafka.out") 2>/dev/null || echo 0)"
    start_jvm kafka "$KAFKA_HEAP" kafka-server-start.sh "$RUN/server.properties"
    # "started (kafka.server.KafkaServer)" is logged once the broker serves requests; look only at this run's lines.
    for ((i = 0; i < 600; i++)); do
        tail -n +"$((mark + 1))" "$RUN/logs/kafka.out" 2>/dev/null | grep -q 'started (kafka.server.KafkaServer)' && break
        if ! pid_of kafka >/dev/null && [ "$i" -gt 5 ]; then
            tail -n 30 "$RUN/logs/kafka.out" >&2 || true
            kdie "the broker exited (log: $RUN/logs/kafka.out)"
        fi
        sleep 0.1
    done
    wait_ready kafka "$KAFKA_PORT" 10
fi
check_loopback kafka "$(pid_of kafka)"

cat <<OUT
BOOTSTRAP=127.0.0.1:$KAFKA_PORT
ZOOKEEPER=127.0.0.1:$ZK_PORT
KAFKA_PID=$(pid_of kafka)
ZOOKEEPER_PID=$(pid_of zookeeper)
RUN_DIR=$RUN
KAFKA_HOME=$KAFKA_HOME
OUT
