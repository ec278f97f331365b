#!/usr/bin/env bash
# Admission webhook latency as the apiserver sees it (docs/results.md "session 10"): pod creates at a fixed rate
# against a kube.sh apiserver, with and without colony run's webhooks registered, plus the
# server-side handling time. Prints p50/p99 per phase.
#   tools/webhook-bench.sh [BUILD_DIR=build] [PODS_PER_PHASE=2000] [RATE=1000] [CLIENTS=16]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target colony_webhook_kube_bench >/dev/null
export COLONY_KOORDINATOR_CRDS=${COLONY_KOORDINATOR_CRDS:-$PWD/../shared/koordinator-crds}
exec "$build/tests/run/colony_webhook_kube_bench" "${2:-2000}" "${3:-1000}" "${4:-16}" 2>/dev/null
