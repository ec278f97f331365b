#!/usr/bin/env bash
# External subscribers read a Colony topic with nothing but the published schema:
#   - `colony log tail` prints JSON lines and follows new events;
#   - kcat fetches raw records, flatc decodes them with messages/colony.fbs;
#   - a Python client (kafka-python + flatbuffers, code generated here by flatc --python, never
#     committed) decodes every record; its view equals colony's.
# Env (from ctest): COLONY_BINARY, COLONY_KAFKA_DIR, COLONY_SOURCE_DIR.
set -euo pipefail
: "${COLONY_BINARY:?}" "${COLONY_KAFKA_DIR:?}" "${COLONY_SOURCE_DIR:?}"
export PYENV_VERSION=system
B=$(cat "$COLONY_KAFKA_DIR/bootstrap")
T=subscribers-$$-$RANDOM
LOG="kafka://$B/$T"
W=$(mktemp -d "${TMPDIR:-/tmp}/colony-subscribers.XXXXXX")
TAILPID=""
trap '[[ -n $TAILPID ]] && kill $TAILPID 2>/dev/null; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in kcat flatc python3; do command -v $tool >/dev/null || fail "$tool not installed"; done
python3 -c 'import kafka, flatbuffers' || fail "python3-kafka and python3-flatbuffers needed"

"$COLONY_BINARY" log generate --log "$LOG" --count 200 --seed 3 --batch 50 >/dev/null

# 1. colony log tail: follows. Started now, it must also see the 100 events appended later.
"$COLONY_BINARY" log tail --log "$LOG" --count 300 >"$W/tail.jsonl" &
TAILPID=$!
sleep 1
"$COLONY_BINARY" log generate --log "$LOG" --count 300 --seed 3 --batch 50 >/dev/null
for _ in $(seq 1 300); do [[ $(wc -l <"$W/tail.jsonl") -ge 300 ]] && break; sleep 0.1; done
wait $TAILPID || fail "log tail exited with $?"
TAILPID=""
[[ $(wc -l <"$W/tail.jsonl") -eq 300 ]] || fail "tail printed $(wc -l <"$W/tail.jsonl") lines, want 300"
python3 - "$W/tail.jsonl" <<'PY' || fail "tail output"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["offset"] for r in rows] == list(range(300)), "offsets are not 0..299"
assert rows[0]["type"] == "NodeRegistered" and rows[16]["type"] == "PodSubmitted", rows[16]
PY
echo "ok: colony log tail printed and followed 300 events"

# 2. kcat + flatc: offsets and keys from Kafka, payloads decoded with the published schema.
kcat -C -b "$B" -t "$T" -p 0 -o beginning -c 300 -e -q -f '%o %k\n' >"$W/kcat.txt"
python3 - "$W/tail.jsonl" "$W/kcat.txt" <<'PY' || fail "kcat offsets/keys differ from colony's"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
kc = [l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines()]
assert len(kc) == 300, len(kc)
for r, (off, key) in zip(rows, kc):
    assert int(off) == r["offset"], (off, r)
    assert r["entity"].split("/", 1)[1] == key, (key, r["entity"])  # Kafka key = entity key
PY
for off in 0 17 299; do
  kcat -C -b "$B" -t "$T" -p 0 -o $off -c 1 -e -q -f '%s' >"$W/ev$off.clny"
  flatc --json --strict-json --raw-binary -o "$W" "$COLONY_SOURCE_DIR/messages/colony.fbs" -- "$W/ev$off.clny"
  python3 - "$W/ev$off.json" "$W/tail.jsonl" $off <<'PY' || fail "flatc decode of offset $off"
import json, sys
ev = json.load(open(sys.argv[1]))
row = [json.loads(l) for l in open(sys.argv[2])][int(sys.argv[3])]
assert ev["offset"] == row["offset"] and ev["payload_type"] == row["type"], (ev, row)
assert ev["payload"] == row["payload"], (ev["payload"], row["payload"])
PY
done
echo "ok: kcat + flatc decoded records equal colony's JSON"

# 3. Python client with code generated from the schema now.
flatc --python -o "$W/gen" "$COLONY_SOURCE_DIR/messages/colony.fbs"
PYTHONPATH="$W/gen" python3 "$COLONY_SOURCE_DIR/tests/kafka/subscriber.py" "$B" "$T" 0 300 >"$W/py.jsonl"
python3 - "$W/tail.jsonl" "$W/py.jsonl" <<'PY' || fail "python subscriber differs from colony"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
py = [json.loads(l) for l in open(sys.argv[2])]
assert len(py) == 300, len(py)
for r, p in zip(rows, py):
    assert (p["offset"], p["entity"], p["type"]) == (r["offset"], r["entity"], r["type"]), (p, r)
    name = r["payload"].get("name", r["payload"].get("pod"))
    assert p["name"] == name, (p, r["payload"])
PY
PYTHONPATH="$W/gen" python3 "$COLONY_SOURCE_DIR/tests/kafka/subscriber.py" "$B" "$T" 250 5 >"$W/py2.jsonl"
[[ $(head -c 13 "$W/py2.jsonl") == '{"offset": 25' ]] || fail "python seek to 250: $(head -1 "$W/py2.jsonl")"
echo "ok: python subscriber (flatc --python) decoded 300 events, and seeks"
echo "PASS"
