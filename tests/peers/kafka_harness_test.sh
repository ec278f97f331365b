#!/usr/bin/env bash
# tests/peers/kafka_harness_test.sh — checks tools/peers/kafka.sh against a real Kafka broker:
# start/status/idempotent start, produce+consume round trip with kcat (plain and consumer group),
# two brokers side by side, stop leaves no process and no data, KILL after an ignored TERM.
# Needs: java 17, maven (first run only, fills the cache), python3, kcat.
# Last line is exactly "N passed, M failed"; exit status 0 iff M == 0.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K="$ROOT/tools/peers/kafka.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kafka-harness-test.XXXXXX")
DA="$WORK/a" DB="$WORK/b"
PASS=0 FAIL=0

ok() { PASS=$((PASS + 1)); echo "PASS: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

cleanup() {
  for d in "$DA" "$DB"; do
    # a SIGSTOPped broker must be continued before it can handle TERM
    [[ -f "$d/broker.pid" ]] && kill -CONT "$(cat "$d/broker.pid")" 2>/dev/null
    [[ -d "$d" ]] && KAFKA_STOP_TIMEOUT=5 bash "$K" stop --dir "$d" >/dev/null 2>&1
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() { echo "$PASS passed, $FAIL failed"; [[ $FAIL -eq 0 ]]; exit $?; }

if ! command -v kcat >/dev/null; then
  bad "kcat installed (apt-get install -y kcat)"; finish
fi

# pid of the broker of a state dir, or empty
pid_of() { cat "$1/broker.pid" 2>/dev/null; }
# true if PID is a live process (a zombie waiting for init to reap it has exited: not live)
live() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [[ ${st%% *} != Z ]]; }
# true if any live kafka.Kafka process was started for state dir $1 ("[k]" keeps pgrep from
# matching a shell whose own command line contains the pattern)
broker_procs() { pgrep -f "[k]afka.Kafka $1/server.properties" >/dev/null; }
export -f live broker_procs

# ---- start
BA=$(bash "$K" start --dir "$DA")
rc=$?
check "start exits 0" test "$rc" -eq 0
if [[ $rc -ne 0 || ! "$BA" =~ ^127\.0\.0\.1:[0-9]+$ ]]; then
  bad "start prints 127.0.0.1:PORT (got '$BA')"; finish
fi
ok "start prints 127.0.0.1:PORT ($BA)"
check "status says running with the bootstrap" test "$(bash "$K" status --dir "$DA")" = "running $BA"
check "second start on the same dir is idempotent" test "$(bash "$K" start --dir "$DA" 2>/dev/null)" = "$BA"
check "broker listens on loopback only" \
  bash -c "grep -qx 'listeners=PLAINTEXT://$BA,CONTROLLER://127.0.0.1:[0-9]*' '$DA/server.properties'"

# ---- round trip with kcat (explicit topic: auto-creation is off)
check "create-topic" bash "$K" create-topic roundtrip 3 --dir "$DA"
check "metadata lists the topic with 3 partitions" \
  bash -c "kcat -b '$BA' -L -t roundtrip | grep -q 'topic \"roundtrip\" with 3 partitions'"
SENT=$(printf 'msg-%d\n' $(seq 1 20))
for i in $(seq 1 20); do echo "key$i:msg-$i"; done | kcat -b "$BA" -P -t roundtrip -K: 2>/dev/null
GOT=$(kcat -b "$BA" -C -t roundtrip -o beginning -e -q -f '%s\n' 2>/dev/null | sort -V)
check "kcat consumes the 20 produced messages" test "$GOT" = "$SENT"
GOTK=$(kcat -b "$BA" -C -t roundtrip -o beginning -e -q -f '%k:%s\n' 2>/dev/null | grep -c '^key\([0-9]*\):msg-\1$')
check "keys survive the round trip" test "$GOTK" -eq 20
GOTG=$(timeout 60 kcat -b "$BA" -G harness-group roundtrip -o beginning -e -q 2>/dev/null | sort -V)
check "kcat consumer group (balanced consumer) reads all 20" test "$GOTG" = "$SENT"

# ---- a second broker side by side
BB=$(bash "$K" start --dir "$DB" 2>/dev/null)
check "second broker in another dir starts on another port" \
  bash -c "[[ '$BB' =~ ^127\.0\.0\.1:[0-9]+$ && '$BB' != '$BA' ]]"
bash "$K" create-topic other --dir "$DB" >/dev/null 2>&1
echo hello-b | kcat -b "$BB" -P -t other 2>/dev/null
check "second broker round trip" test "$(kcat -b "$BB" -C -t other -e -q 2>/dev/null)" = "hello-b"
check "topics are separate per broker" bash -c "! kcat -b '$BB' -L | grep -q roundtrip"

# ---- stop
PA=$(pid_of "$DA")
bash "$K" stop --dir "$DA" 2>/dev/null
check "stop exits 0" test $? -eq 0
check "stop leaves no broker process" bash -c "! live '$PA' && ! broker_procs '$DA'"
check "stop removes data, pid and bootstrap" bash -c "[[ ! -e '$DA/data' && ! -e '$DA/broker.pid' && ! -e '$DA/bootstrap' ]]"
check "port is closed after stop" bash -c "! (exec 3<>/dev/tcp/${BA%:*}/${BA#*:}) 2>/dev/null"
bash "$K" status --dir "$DA" >/dev/null
check "status after stop is 'not running' (rc 3)" test $? -eq 3
check "stop when not running is a no-op" bash "$K" stop --dir "$DA"
check "other broker still runs" test "$(bash "$K" status --dir "$DB")" = "running $BB"
bash "$K" stop --dir "$DB" 2>/dev/null
check "second broker stopped" bash -c "! broker_procs '$DB'"

# ---- restart in the used dir (fresh data), then a broker that ignores TERM gets KILLed
BC=$(bash "$K" start --dir "$DA" 2>/dev/null)
PC=$(pid_of "$DA")
check "restart in the same dir works" bash -c "[[ '$BC' =~ ^127\.0\.0\.1:[0-9]+$ ]]"
check "restart starts with empty data (no old topic)" bash -c "! kcat -b '$BC' -L | grep -q roundtrip"
kill -STOP "$PC" 2>/dev/null
KAFKA_STOP_TIMEOUT=2 bash "$K" stop --dir "$DA" 2>/dev/null
check "stop KILLs a broker that ignores TERM" bash -c "! live '$PC' && ! broker_procs '$DA'"

finish
