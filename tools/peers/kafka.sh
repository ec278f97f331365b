#!/usr/bin/env bash
# tools/peers/kafka.sh — a real Apache Kafka broker (single-node KRaft, broker+controller) for tests.
#
#   kafka.sh install                        resolve Kafka's jars from Maven Central into the cache
#   kafka.sh start  [--dir DIR]             start a broker on 127.0.0.1:<free port>; prints the
#                                           bootstrap address (127.0.0.1:PORT) on stdout
#   kafka.sh stop   [--dir DIR]             TERM (then KILL) the broker, delete its data
#   kafka.sh status [--dir DIR]             "running 127.0.0.1:PORT" (rc 0) or "not running" (rc 3)
#   kafka.sh env    [--dir DIR]             KAFKA_BOOTSTRAP=, KAFKA_PID=, KAFKA_DIR=, KAFKA_LOG= lines
#   kafka.sh create-topic NAME [PARTITIONS] [--dir DIR]
#                                           create a topic (auto-creation is off on the broker)
#   kafka.sh kill   [--dir DIR] [--signal KILL|TERM]
#                                           stop the broker but KEEP its data, config and port
#                                           (fault tests; default signal KILL = a crash)
#   kafka.sh restart [--dir DIR]            start a killed broker again on the same port with
#                                           its data (no format); prints the bootstrap address
#
# One DIR = one broker; brokers in different DIRs run side by side on different ports.
# Environment (all optional):
#   COLONY_PEERS_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/colony/peers);
#                        jars go to $COLONY_PEERS_CACHE/kafka-<version>/libs, Maven's local
#                        repository to $COLONY_PEERS_CACHE/m2
#   KAFKA_HEAP_OPTS      default "-Xms128m -Xmx512m"
#   KAFKA_JVM_PERFORMANCE_OPTS  default "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData"
#   KAFKA_READY_TIMEOUT  seconds to wait for readiness (default 60)
#   KAFKA_STOP_TIMEOUT   seconds between TERM and KILL (default 30)
#   KAFKA_AUTO_CREATE_TOPICS  auto.create.topics.enable (default false)
#   JAVA, MVN, PYTHON    executables (default java, mvn, python3)
# Recipe, measurements and rationale: docs/peers.md.
set -euo pipefail

KAFKA_VERSION=3.9.1   # keep in sync with tools/peers/kafka/pom.xml (kafka.version)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEER=kafka
PEER_SCRIPT=${BASH_SOURCE[0]}
# shellcheck source=tools/peers/peer_lib.sh
source "$HERE/peer_lib.sh"   # log, die, now, elapsed, alive, usage, parse_dir
POM="$HERE/kafka/pom.xml"
PROBE="$HERE/kafka_probe.py"
CACHE=${COLONY_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colony/peers}
KCACHE="$CACHE/kafka-$KAFKA_VERSION"
LIBS="$KCACHE/libs"
JAVA=${JAVA:-java}
MVN=${MVN:-mvn}
PYTHON=${PYTHON:-python3}
export PYENV_VERSION=${PYENV_VERSION:-system}   # pyenv shims: use Debian's python3 (stdlib is enough)
READY_TIMEOUT=${KAFKA_READY_TIMEOUT:-60}
STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-30}


# ---------------------------------------------------------------- jar cache (Maven Central)
pom_hash() { sha256sum "$POM" | cut -d' ' -f1; }

libs_ok() {
  [[ -f "$KCACHE/.complete" && "$(cat "$KCACHE/.complete")" == "$(pom_hash)" &&
     -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" && -f "$LIBS/reload4j-1.2.25.jar" ]]
}

ensure_libs() {
  libs_ok && return 0
  command -v "$MVN" >/dev/null || die "maven ($MVN) not found; apt-get install -y maven"
  command -v "$JAVA" >/dev/null || die "java ($JAVA) not found; apt-get install -y openjdk-17-jre-headless"
  mkdir -p "$KCACHE"
  # One resolver at a time per cache; others wait, then find the cache complete.
  exec 8>"$KCACHE.lock"
  flock -w 600 8 || die "timed out waiting for $KCACHE.lock"
  if ! libs_ok; then
    local t0 tmp; t0=$(now); tmp="$KCACHE/libs.tmp.$$"
    rm -rf "$tmp"
    log "resolving Apache Kafka $KAFKA_VERSION from Maven Central into $LIBS"
    # Output to stderr: our stdout carries only the bootstrap address / paths. Debian's Maven
    # 3.8.7 prints bare ESC[0m resets even in batch mode; sed drops them (pipefail keeps mvn's rc).
    if ! "$MVN" -q -B -Dstyle.color=never -f "$POM" -Dmaven.repo.local="$CACHE/m2" \
           dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 |
         sed 's/\x1b\[0m//g' >&2; then
      rm -rf "$tmp"; die "maven resolve failed"
    fi
    [[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "resolve produced no kafka_2.13-$KAFKA_VERSION.jar"
    local got
    got=$("$JAVA" -cp "$tmp/*" kafka.Kafka --version 2>/dev/null | head -n1) || true
    [[ "$got" == "$KAFKA_VERSION"* ]] || { rm -rf "$tmp"; die "kafka.Kafka --version says '$got'"; }
    rm -rf "$LIBS.old.$$"; [[ -d "$LIBS" ]] && mv "$LIBS" "$LIBS.old.$$"
    mv "$tmp" "$LIBS"; rm -rf "$LIBS.old.$$"
    pom_hash >"$KCACHE/.complete"
    log "resolved $(ls "$LIBS" | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in $(elapsed "$t0") s"
  fi
  flock -u 8; exec 8>&-
}


lock_dir() {    # serialises start/stop/status on one DIR; fd 9 is never passed to the broker
  exec 9>"$DIR/.lock"
  flock -w $((READY_TIMEOUT + STOP_TIMEOUT + 120)) 9 || die "timed out waiting for $DIR/.lock"
}

# True if PID is alive and is the broker started for this DIR (guards against PID reuse and zombies).
is_our_broker() {
  local pid=$1 cmd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$cmd" == *kafka.Kafka*"$DIR/server.properties"* ]]
}


broker_pid() { [[ -f "$DIR/broker.pid" ]] && cat "$DIR/broker.pid"; }

running() { local p; p=$(broker_pid) && is_our_broker "$p"; }

# Two distinct free loopback ports (both sockets held open together so they differ).
free_ports() {
  "$PYTHON" -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])'
}

# 22-char unpadded base64url of 16 random bytes, never starting with "-" (option parser).
cluster_id() {
  "$PYTHON" -c '
import base64, os
while True:
    s = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if s[0] != "-":
        print(s); break'
}

write_config() {  # $1 broker port, $2 controller port
  cat >"$DIR/server.properties" <<EOF
# written by tools/peers/kafka.sh; see docs/peers.md
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$2
listeners=PLAINTEXT://127.0.0.1:$1,CONTROLLER://127.0.0.1:$2
advertised.listeners=PLAINTEXT://127.0.0.1:$1
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DIR/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=${KAFKA_AUTO_CREATE_TOPICS:-false}
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
log.cleaner.dedupe.buffer.size=33554432
EOF
  cat >"$DIR/log4j.properties" <<'EOF'
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
# the readiness line "Kafka Server started" is logged at INFO by this logger
log4j.logger.kafka.server.KafkaRaftServer=INFO
EOF
}

jvm_opts() {
  # shellcheck disable=SC2206  # word splitting of the option strings is intended
  JVM=(${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}
       ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData}
       -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true
       "-Djava.io.tmpdir=$DIR/tmp" "-Dlog4j.configuration=file:$DIR/log4j.properties"
       "-Dkafka.logs.dir=$DIR/logs")
}

clean_data() { rm -rf "$DIR/data" "$DIR/tmp" "$DIR/logs" "$DIR/broker.pid" "$DIR/bootstrap"; }

kill_broker() {   # TERM, wait STOP_TIMEOUT, KILL; returns once the process has exited
  local pid=$1 i
  is_our_broker "$pid" || return 0
  # From here on follow the PID itself: an exiting JVM drops its cmdline before it is gone.
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do alive "$pid" || return 0; sleep 0.1; done
  log "broker $pid ignored TERM for ${STOP_TIMEOUT}s; sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do alive "$pid" || return 0; sleep 0.1; done
  die "broker $pid survived KILL"
}

# One start attempt. rc 0 ready, rc 2 port clash (retry), rc 1 other failure.
try_start() {
  local bp=$1 cp=$2 t0=$3
  clean_data; mkdir -p "$DIR/data" "$DIR/tmp" "$DIR/logs"
  write_config "$bp" "$cp"
  jvm_opts
  if ! "$JAVA" "${JVM[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format \
        -t "$(cluster_id)" -c "$DIR/server.properties" >"$DIR/format.log" 2>&1 9>&-; then
    cat "$DIR/format.log" >&2; return 1
  fi
  launch_and_wait "$bp" "$t0"
}

# Launches the broker on the config in $DIR and waits until it is ready.
# rc 0 ready, rc 2 port clash, rc 1 other failure.
launch_and_wait() {
  local bp=$1 t0=$2 pid i probe
  # setsid: the broker outlives this script and ignores the caller's terminal signals; all fds
  # are redirected so a capturing parent (ctest, $(...)) is not kept waiting.
  local launcher=(); command -v setsid >/dev/null && launcher=(setsid)
  "${launcher[@]}" "$JAVA" "${JVM[@]}" -cp "$LIBS/*" kafka.Kafka "$DIR/server.properties" \
      </dev/null >"$DIR/broker.log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$DIR/broker.pid"
  for ((i = 0; ; i++)); do
    if ! alive "$pid"; then
      sleep 0.2   # let the log flush
      if grep -qE 'BindException|Address already in use' "$DIR/broker.log"; then return 2; fi
      log "broker exited before it was ready; tail of $DIR/broker.log:"; tail -n 30 "$DIR/broker.log" >&2
      return 1
    fi
    if grep -q 'Kafka Server started' "$DIR/broker.log" &&
       probe=$("$PYTHON" "$PROBE" metadata "127.0.0.1:$bp" 2>/dev/null) &&
       grep -qx "1 127.0.0.1:$bp" <<<"$probe"; then
      echo "127.0.0.1:$bp" >"$DIR/bootstrap"
      log "broker pid $pid ready on 127.0.0.1:$bp in $(elapsed "$t0") s (dir $DIR)"
      return 0
    fi
    if [[ $(elapsed "$t0" | cut -d. -f1) -ge $READY_TIMEOUT ]]; then
      log "broker not ready after ${READY_TIMEOUT}s; tail of $DIR/broker.log:"; tail -n 30 "$DIR/broker.log" >&2
      kill_broker "$pid"; return 1
    fi
    sleep 0.1
  done
}

cmd_start() {
  ensure_libs
  lock_dir
  if running && [[ -f "$DIR/bootstrap" ]]; then cat "$DIR/bootstrap"; return 0; fi
  local p; p=$(broker_pid 2>/dev/null) || true
  [[ -n "$p" ]] && kill_broker "$p"     # half-started leftover from an interrupted start
  local t0 attempt ports rc
  t0=$(now)
  for attempt in 1 2 3; do
    ports=$(free_ports)
    rc=0; try_start ${ports% *} ${ports#* } "$t0" || rc=$?
    case $rc in
      0) cat "$DIR/bootstrap"; return 0 ;;
      2) log "port clash on attempt $attempt; retrying with new ports"; kill_broker "$(broker_pid)" ;;
      *) clean_data; exit 1 ;;
    esac
  done
  clean_data; die "could not bind free ports after 3 attempts"
}

cmd_stop() {
  lock_dir
  local p; p=$(broker_pid 2>/dev/null) || true
  if [[ -n "$p" ]] && is_our_broker "$p"; then
    local t0; t0=$(now)
    kill_broker "$p"
    log "stopped broker pid $p in $(elapsed "$t0") s"
  else
    log "not running (dir $DIR)"
  fi
  clean_data   # broker.log and server.properties stay for post-mortems
}

# kill: like a crash (KILL) or a graceful shutdown (TERM), but data/, the config and the
# bootstrap file stay, so `restart` brings the same broker back on the same port.
cmd_kill() {
  local sig=KILL
  if [[ ${#ARGS[@]} -ge 1 ]]; then
    [[ ${#ARGS[@]} -eq 2 && ${ARGS[0]} == --signal && ${ARGS[1]} =~ ^(KILL|TERM)$ ]] ||
      die "usage: kafka.sh kill [--dir DIR] [--signal KILL|TERM]"
    sig=${ARGS[1]}
  fi
  lock_dir
  local p; p=$(broker_pid 2>/dev/null) || true
  if [[ -z "$p" ]] || ! is_our_broker "$p"; then log "not running (dir $DIR)"; return 0; fi
  local t0 i; t0=$(now)
  if [[ $sig == TERM ]]; then
    kill_broker "$p"
  else
    kill -KILL "$p" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do alive "$p" || break; sleep 0.1; done
    alive "$p" && die "broker $p survived KILL"
  fi
  rm -f "$DIR/broker.pid"
  log "killed broker pid $p with $sig in $(elapsed "$t0") s; data kept in $DIR/data"
}

cmd_restart() {
  ensure_libs
  lock_dir
  if running && [[ -f "$DIR/bootstrap" ]]; then cat "$DIR/bootstrap"; return 0; fi
  [[ -f "$DIR/server.properties" && -d "$DIR/data" ]] ||
    die "nothing to restart in $DIR (no server.properties or data/); use start"
  local bp; bp=$(sed -n 's|^listeners=PLAINTEXT://127\.0\.0\.1:\([0-9]*\),.*|\1|p' "$DIR/server.properties")
  [[ -n "$bp" ]] || die "no PLAINTEXT listener in $DIR/server.properties"
  mkdir -p "$DIR/tmp" "$DIR/logs"
  jvm_opts
  local t0 rc; t0=$(now)
  rc=0; launch_and_wait "$bp" "$t0" || rc=$?
  case $rc in
    0) cat "$DIR/bootstrap" ;;
    2) die "port $bp is taken by another process; cannot restart on the same address" ;;
    *) die "restart failed; see $DIR/broker.log" ;;
  esac
}

cmd_status() {
  if running && [[ -f "$DIR/bootstrap" ]]; then echo "running $(cat "$DIR/bootstrap")"; return 0; fi
  echo "not running"; return 3
}

cmd_env() {
  running && [[ -f "$DIR/bootstrap" ]] || { log "not running (dir $DIR)"; return 3; }
  echo "KAFKA_BOOTSTRAP=$(cat "$DIR/bootstrap")"
  echo "KAFKA_PID=$(broker_pid)"
  echo "KAFKA_DIR=$DIR"
  echo "KAFKA_LOG=$DIR/broker.log"
}

cmd_create_topic() {
  [[ ${#ARGS[@]} -ge 1 && ${#ARGS[@]} -le 2 ]] || die "usage: kafka.sh create-topic NAME [PARTITIONS] [--dir DIR]"
  running && [[ -f "$DIR/bootstrap" ]] || die "no broker running in $DIR"
  "$PYTHON" "$PROBE" create-topic "$(cat "$DIR/bootstrap")" "${ARGS[0]}" "${ARGS[1]:-1}" 1
}


main() {
  (($#)) || usage
  local cmd=$1; shift
  case "$cmd" in
    install) ensure_libs; echo "$LIBS" ;;
    start) parse_dir "$@"; cmd_start ;;
    stop) parse_dir "$@"; cmd_stop ;;
    status) parse_dir "$@"; cmd_status ;;
    env) parse_dir "$@"; cmd_env ;;
    create-topic) NEED_ARGS=1 parse_dir "$@"; cmd_create_topic ;;
    kill) NEED_ARGS=1 parse_dir "$@"; cmd_kill ;;
    restart) parse_dir "$@"; cmd_restart ;;
    -h|--help|help) usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}

main "$@"
