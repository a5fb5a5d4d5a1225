#!/usr/bin/env bash
# Throwaway Apache Kafka brokers (KRaft mode, no ZooKeeper) for Sluice's tests.
#
#   scripts/kafka-test-server.sh install        # Java and Maven when missing, the broker's jars
#   scripts/kafka-test-server.sh start          # one broker (install if needed); prints its bootstrap servers
#   scripts/kafka-test-server.sh start-cluster  # three brokers, replication 3, min.insync.replicas=2;
#                                               # prints their bootstrap servers
#   scripts/kafka-test-server.sh bootstrap [cluster|tls]  # prints the bootstrap servers of the running
#                                               # broker(s); `tls`: the single broker's SASL_SSL listener
#   scripts/kafka-test-server.sh tls-ca         # prints the file of the CA that signs that listener
#   scripts/kafka-test-server.sh kill [N]       # kill -9 of cluster broker N (1..3), or of the single
#                                               # broker without N, for failure tests
#   scripts/kafka-test-server.sh restart [N]    # starts that broker again on its own data
#   scripts/kafka-test-server.sh stop           # stops every broker started here (data stays until `clean`)
#   scripts/kafka-test-server.sh clean          # stops them and deletes their data
#
# Then: SLUICE_TEST_KAFKA_BOOTSTRAP=$(scripts/kafka-test-server.sh bootstrap) \
#         cargo test -p sluice-log --features kafka
#
# Apache Kafka ships no Debian package, so the broker is the project's jars
# from Maven Central (a small POM, `mvn dependency:copy-dependencies`), cached
# under ${XDG_CACHE_HOME:-~/.cache}/sluice (override with SLUICE_KAFKA_JARS),
# run by the JVM of Debian's openjdk-17-jre-headless. Brokers listen on
# 127.0.0.1 only, in plaintext (local tests, never production); the single
# broker also listens with SASL_SSL on the next port, with a certificate for
# 127.0.0.1 and localhost from a CA made here (openssl) and the test-only
# user `sluice` / `sluice-test-secret` for PLAIN and SCRAM-SHA-256; state lives
# under target/kafka-test (override with SLUICE_KAFKA_TEST_DIR); ports from
# 29092 (SLUICE_KAFKA_TEST_PORT; below the ephemeral range, so that no
# outgoing connection holds one) or the next free ones. Each broker is stopped
# by its own pid. Every command is idempotent.
set -euo pipefail

kafka_version=4.1.1
log4j_version=2.24.3
slf4j_version=2.0.17
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base=${SLUICE_KAFKA_TEST_DIR:-$repo/target/kafka-test}
jars=${SLUICE_KAFKA_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-$kafka_version}

die() { echo "kafka-test-server: $*" >&2; exit 1; }
say() { echo "kafka-test-server: $*" >&2; }

apt_install() {
    [[ $(id -u) -eq 0 ]] || die "missing $*; install them (Debian/Ubuntu: sudo apt-get install -y $*) or run this script as root"
    say "installing $* (apt-get install)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq "$@" >&2
}

java_ok() {
    command -v java >/dev/null &&
        [[ $(java -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p') -ge 17 ]]
}

install() {
    local need=()
    java_ok || need+=(openjdk-17-jre-headless)
    command -v mvn >/dev/null || need+=(maven)
    ((${#need[@]} == 0)) || apt_install "${need[@]}"
    java_ok || die "Java 17 or newer is still not found"
    local work
    work=$(mktemp -d)
    cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sluice.test</groupId>
  <artifactId>kafka-test-broker</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-server</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$slf4j_version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$log4j_version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$log4j_version</version></dependency>
  </dependencies>
</project>
POM
    # The jars are fetched again whenever this POM changes.
    if cmp -s "$work/pom.xml" "$jars/pom.xml"; then rm -rf "$work"; return 0; fi
    say "fetching Apache Kafka $kafka_version's jars (Maven) into $jars"
    mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$work/libs" >"$work/mvn.log" 2>&1 ||
        { cat "$work/mvn.log" >&2; die "mvn could not fetch the broker's jars"; }
    cp "$work/pom.xml" "$work/libs/pom.xml"
    mkdir -p "$(dirname "$jars")"
    rm -rf "$jars"
    mv "$work/libs" "$jars"
    rm -rf "$work"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The next port from $1 on that nothing listens on and no broker here claimed.
free_port() {
    local port=$1
    while port_in_use "$port" || grep -qsx "$port" "$base"/*/broker-*/ports; do port=$((port + 1)); done
    echo "$port"
}

# The test-only credentials of the SASL_SSL listener.
tls_user=sluice
tls_password=sluice-test-secret
store_password=sluice-test-store

# A CA and a certificate for 127.0.0.1 and localhost signed by it, in $base/tls
# (once): ca.crt for clients, broker.p12 for the broker.
make_certs() {
    local tls=$base/tls
    [[ -f $tls/broker.p12 ]] && return 0
    command -v openssl >/dev/null || apt_install openssl
    mkdir -p "$tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Sluice test CA" \
        -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$tls/broker.key" -out "$tls/broker.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$tls/san.ext"
    openssl x509 -req -in "$tls/broker.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
        -CAcreateserial -days 3650 -extfile "$tls/san.ext" -out "$tls/broker.crt" 2>/dev/null
    openssl pkcs12 -export -in "$tls/broker.crt" -inkey "$tls/broker.key" -certfile "$tls/ca.crt" \
        -name broker -passout "pass:$store_password" -out "$tls/broker.p12"
}

# Writes the configuration of broker $2 of deployment $1 (single|cluster),
# given its ports and the controller quorum `voters`; $5, the single
# broker's SASL_SSL port.
write_config() {
    local kind=$1 id=$2 port=$3 cport=$4 sport=${5:-} dir=$base/$1/broker-$2 rf=1 isr=1
    local listeners="PLAINTEXT://127.0.0.1:$port" map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
    [[ $kind == cluster ]] && { rf=3; isr=2; }
    [[ -n $sport ]] && { listeners+=",SASL_SSL://127.0.0.1:$sport"; map+=,SASL_SSL:SASL_SSL; }
    mkdir -p "$dir"
    cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=$listeners,CONTROLLER://127.0.0.1:$cport
advertised.listeners=$listeners
controller.listener.names=CONTROLLER
listener.security.protocol.map=$map
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=4
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
PROPS
    if [[ -n $sport ]]; then
        cat >>"$dir/server.properties" <<PROPS
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$tls_user="$tls_password";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PKCS12
ssl.keystore.location=$base/tls/broker.p12
ssl.keystore.password=$store_password
ssl.key.password=$store_password
PROPS
    fi
    printf '%s\n' "$port" "$cport" ${sport:+"$sport"} >"$dir/ports"
    cat >"$dir/log4j2.properties" <<'LOG'
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
LOG
}

broker_running() { [[ -f $1/pid ]] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

# Starts the broker in directory $1 (already formatted) and waits until it listens.
launch() {
    local dir=$1 port heap=${2:-512m}
    port=$(head -n1 "$dir/ports")
    broker_running "$dir" && return 0
    nohup java -Xms128m -Xmx"$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dlog4j2.configurationFile="$dir/log4j2.properties" -Dkafka.logs.dir="$dir" \
        -cp "$jars/*" kafka.Kafka "$dir/server.properties" >>"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    for _ in $(seq 240); do
        port_in_use "$port" && return 0
        broker_running "$dir" || break
        sleep 0.5
    done
    tail -n 20 "$dir/server.log" >&2 || true
    die "the broker in $dir did not start listening on 127.0.0.1:$port; see $dir/server.log"
}

# Formats (once) and starts deployment $1 of $2 brokers, then prints its bootstrap servers.
start_kind() {
    local kind=$1 count=$2 heap=$3 first=${SLUICE_KAFKA_TEST_PORT:-29092} id port cport cluster_id
    install
    # A single broker made before it had a TLS listener is made again.
    if [[ $kind == single && -f $base/single/broker-1/ports ]] &&
        (($(wc -l <"$base/single/broker-1/ports") < 3)); then
        stop_broker "$base/single/broker-1"
        rm -rf "${base:?}/single"
    fi
    if [[ ! -f $base/$kind/cluster-id ]]; then
        rm -rf "${base:?}/$kind"
        mkdir -p "$base/$kind"
        [[ $kind == cluster ]] && first=$((first + 100))
        local ports=() next=$first scram=() sport=
        for _ in $(seq $((count * 2 + (count == 1)))); do
            next=$(free_port "$next")
            ports+=("$next")
            next=$((next + 1))
        done
        voters=
        for id in $(seq "$count"); do
            voters+="${voters:+,}$id@127.0.0.1:${ports[$((id * 2 - 1))]}"
        done
        if [[ $kind == single ]]; then
            make_certs
            sport=${ports[2]}
            scram=(--add-scram "SCRAM-SHA-256=[name=$tls_user,password=$tls_password]")
        fi
        cluster_id=$(java -cp "$jars/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
        for id in $(seq "$count"); do
            write_config "$kind" "$id" "${ports[$((id * 2 - 2))]}" "${ports[$((id * 2 - 1))]}" "$sport"
            java -cp "$jars/*" kafka.tools.StorageTool format -t "$cluster_id" "${scram[@]}" \
                -c "$base/$kind/broker-$id/server.properties" >"$base/$kind/broker-$id/format.log" 2>&1 ||
                die "formatting broker $id failed; see $base/$kind/broker-$id/format.log"
        done
        echo "$cluster_id" >"$base/$kind/cluster-id"
    fi
    # Brokers of a quorum wait for each other, so all start before any is awaited.
    for id in $(seq "$count"); do launch "$base/$kind/broker-$id" "$heap" & done
    wait_all
    bootstrap "$kind"
}

wait_all() {
    local pid failed=0
    for pid in $(jobs -p); do wait "$pid" || failed=1; done
    ((failed == 0)) || die "a broker did not start"
}

bootstrap() {
    local kind=${1:-single} dir servers= hint=
    if [[ $kind == tls ]]; then
        dir=$base/single/broker-1
        [[ -f $dir/ports && $(wc -l <"$dir/ports") -ge 3 ]] && broker_running "$dir" ||
            die "no broker with a TLS listener; run: scripts/kafka-test-server.sh clean && scripts/kafka-test-server.sh start"
        echo "127.0.0.1:$(sed -n 3p "$dir/ports")"
        return 0
    fi
    [[ $kind == single || $kind == cluster ]] || die "usage: $0 bootstrap [cluster|tls]"
    for dir in "$base/$kind"/broker-*; do
        [[ -f $dir/ports ]] && broker_running "$dir" && port_in_use "$(head -n1 "$dir/ports")" &&
            servers+="${servers:+,}127.0.0.1:$(head -n1 "$dir/ports")"
    done
    [[ $kind == cluster ]] && hint=-cluster
    [[ -n $servers ]] || die "not running; run: scripts/kafka-test-server.sh start$hint"
    echo "$servers"
}

# The directory of cluster broker $1, or of the single broker when $1 is empty.
broker_dir() {
    if [[ -z ${1:-} ]]; then
        [[ -f $base/single/broker-1/ports ]] || die "no broker; run start first"
        echo "$base/single/broker-1"
        return 0
    fi
    [[ $1 =~ ^[123]$ && -f $base/cluster/broker-$1/ports ]] || die "no cluster broker '$1'; run start-cluster first"
    echo "$base/cluster/broker-$1"
}

kill_broker() {
    local dir
    dir=$(broker_dir "${1:-}")
    broker_running "$dir" && kill -9 "$(cat "$dir/pid")" && say "killed broker ${1:-} (kill -9)"
    rm -f "$dir/pid"
}

# Stops the broker in $1: SIGTERM (a controlled shutdown), SIGKILL after 30 s.
stop_broker() {
    local dir=$1 pid
    broker_running "$dir" || { rm -f "$dir/pid"; return 0; }
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    rm -f "$dir/pid"
}

stop() {
    local dir
    for dir in "$base"/single/broker-* "$base"/cluster/broker-*; do
        [[ -d $dir ]] && stop_broker "$dir" &
    done
    wait
}

case ${1:-} in
    install) install; say "Apache Kafka $kafka_version's jars in $jars" ;;
    start) start_kind single 1 512m ;;
    start-cluster) start_kind cluster 3 384m ;;
    bootstrap) bootstrap "${2:-}" ;;
    tls-ca) [[ -f $base/tls/ca.crt ]] || die "no CA; run start first"; echo "$base/tls/ca.crt" ;;
    kill) kill_broker "${2:-}" ;;
    restart) launch "$(broker_dir "${2:-}")" 384m; bootstrap "${2:+cluster}" ;;
    stop) stop ;;
    clean) stop; rm -rf "$base" ;;
    *) die "usage: $0 install|start|start-cluster|bootstrap [cluster|tls]|tls-ca|kill [N]|restart [N]|stop|clean" ;;
esac
