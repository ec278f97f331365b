#!/usr/bin/env bash
# ctest fixture for the Kafka tests: broker_fixture.sh start|stop DIR.
# start fails loudly (never skips) when Java is missing: CI installs it, and a skipped broker
# would silently turn every Kafka test green.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cmd=${1:?start|stop}; dir=${2:?state dir}
case "$cmd" in
  start)
    if ! command -v "${JAVA:-java}" >/dev/null; then
      echo "broker_fixture: FAIL: java not found; the Kafka tests need a real broker." >&2
      echo "  apt-get install -y openjdk-17-jre-headless maven kcat python3-kafka python3-flatbuffers" >&2
      exit 1
    fi
    bash "$ROOT/tools/peers/kafka.sh" start --dir "$dir"
    test -s "$dir/bootstrap" || { echo "broker_fixture: FAIL: no $dir/bootstrap" >&2; exit 1; } ;;
  stop)
    bash "$ROOT/tools/peers/kafka.sh" stop --dir "$dir" ;;
  *) echo "usage: broker_fixture.sh start|stop DIR" >&2; exit 2 ;;
esac
