#!/usr/bin/env bash
# tools/bench-cluster.sh — cluster-mode throughput: `colony run` against a real kube-apiserver
# in the shape of kube-scheduler's scheduler_perf SchedulingBasic/5000Nodes_10000Pods, and
# (unless --skip-scheduler-perf) that scheduler_perf workload itself on the same machine, so
# the ratio comes from one run (issue 13; docs/results.md "Performance").
#
#   tools/bench-cluster.sh [--nodes N] [--pods M] [--init-pods I] [--workers C]
#                          [--skip-scheduler-perf | --skip-colony]
#
# Defaults: 5000 nodes, 10000 measured pods, 1000 init pods (scheduler_perf's params), 32
# concurrent creators. Steps:
#   1. etcd + kube-apiserver 1.34.3 in a temp dir (tools/peers/kube.sh start), with
#      --max-requests-inflight / --max-mutating-requests-inflight raised (KUBE_APISERVER_ARGS,
#      default "--max-requests-inflight=2000 --max-mutating-requests-inflight=1000") so that
#      creation is not throttled by the apiserver's inflight limits (429s are retried, counted).
#   2. `build/colony run --kubeconfig K --log DIR/colony-log` started first; then N nodes like
#      scheduler_perf's templates/node-default.yaml (cpu 4, memory 32Gi, pods 110, Ready) and a
#      namespace; waits until colony's progress line shows every node observed and the count
#      stands still.
#   3. I init pods, then M measured pods like templates/pod-default.yaml (requests = limits
#      cpu 100m, memory 500Mi) with schedulerName koord-scheduler, from C concurrent creators
#      (tools/bench-cluster-load.go, Go standard library, built here). Per pod: client clock
#      just before the POST, and the first watch event carrying spec.nodeName (the binding
#      written and visible). Throughput = M / (last bound - first sent); p50/p99 of
#      bound - sent. CPU seconds (utime+stime from /proc/PID/stat) of colony run,
#      kube-apiserver and etcd over the measured phase, and their peak RSS (VmHWM).
#   4. scheduler_perf: builds `scheduler_perf_misc.test` once into the peers cache (docs:
#      shared peers.md B.0.1; ~80 s with the apiserver's packages compiled, more on a cold
#      cache), runs SchedulingBasic/5000Nodes_10000Pods (the upstream workload, whatever
#      --nodes/--pods say) and reads SchedulingThroughput's Average from its JSON.
# Prints a summary table at the end; everything is kept in the run folder (printed).
# Environment: BENCH_DIR (run folder, default a new temp folder), COLONY (default build/colony),
# COLONY_PEERS_CACHE (as kube.sh), KUBE_APISERVER_ARGS, GO, BENCH_LOAD (a prebuilt
# tools/bench-cluster-load.go binary: then Go is needed only to build scheduler_perf, and not at all
# when the cache holds it; how a machine without Go runs this bench).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODES=5000 PODS=10000 INIT_PODS="" WORKERS=32 SKIP_SP=0 SKIP_COLONY=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --init-pods) INIT_PODS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --skip-scheduler-perf) SKIP_SP=1; shift ;;
    --skip-colony) SKIP_COLONY=1; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "bench-cluster: unknown argument $1" >&2; exit 2 ;;
  esac
done
INIT_PODS=${INIT_PODS:-$((PODS / 10))}
DIR=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/colony-bench.XXXXXX")}
mkdir -p "$DIR"
KUBE_SH="$ROOT/tools/peers/kube.sh"
COLONY=${COLONY:-$ROOT/build/colony}
CACHE=${COLONY_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colony/peers}
export PYENV_VERSION=${PYENV_VERSION:-system}
export KUBE_APISERVER_ARGS=${KUBE_APISERVER_ARGS:---max-requests-inflight=2000 --max-mutating-requests-inflight=1000}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
say() { echo "bench: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
((SKIP_COLONY)) || [[ -x "$COLONY" ]] || die "$COLONY is missing (cmake --build build --target colony)"
need_go() { [[ -x "$GO" ]] || die "go not found (set GO=, or BENCH_LOAD= for the load generator)"; }

RUN_PID=""
cleanup() {
  [[ -n "$RUN_PID" ]] && kill "$RUN_PID" 2>/dev/null && wait "$RUN_PID" 2>/dev/null || true
  bash "$KUBE_SH" stop --dir "$DIR/kube" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# /proc figures: CPU seconds (utime+stime) and peak RSS in MiB.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ split($0, a, ") "); split(a[2], f, " "); printf "%.2f", (f[12] + f[13]) / hz }' "/proc/$1/stat"; }
hwm_mib() { awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# ---------------------------------------------------------------- load generator
TPUT="" SPAN=""
if ((SKIP_COLONY == 0)); then
LOAD=${BENCH_LOAD:-}
if [[ -z "$LOAD" ]]; then
  need_go
  LOAD="$DIR/bench-cluster-load"
  GOCACHE="$CACHE/gobuild" GOTOOLCHAIN=local CGO_ENABLED=0 "$GO" build -o "$LOAD" "$ROOT/tools/bench-cluster-load.go" ||
    die "building tools/bench-cluster-load.go"
fi

# ---------------------------------------------------------------- apiserver + colony run
bash "$KUBE_SH" install >/dev/null
KUBECONFIG=$(bash "$KUBE_SH" start --dir "$DIR/kube")
export KUBECONFIG
eval "$(bash "$KUBE_SH" env --dir "$DIR/kube" | sed -n 's/^\(KUBE_API\|KUBE_CA\|KUBE_TOKEN\|KUBECTL\)=\(.*\)$/export \1="\2"/p')"
API_PID=$(cat "$DIR/kube/apiserver.pid") ETCD_PID=$(cat "$DIR/kube/etcd.pid")
say "apiserver up ($KUBE_API, pid $API_PID; etcd pid $ETCD_PID; flags: $KUBE_APISERVER_ARGS)"
"$KUBECTL" create namespace bench >/dev/null

"$COLONY" run --kubeconfig "$KUBECONFIG" --log "$DIR/colony-log" >"$DIR/colony-run.out" 2>"$DIR/colony-run.err" &
RUN_PID=$!
say "colony run started (pid $RUN_PID, log $DIR/colony-log)"

t0=$(date +%s.%N)
NODE_JSON=$("$LOAD" nodes -n "$NODES" -c "$WORKERS") || die "creating nodes"
say "nodes: $NODE_JSON"
# colony's progress line (every 5 s): "... N observations ...". Synced = at least one per node,
# and the same count on two lines in a row.
observations() { grep -o '[0-9]* observations' "$DIR/colony-run.err" | tail -n1 | cut -d' ' -f1 || true; }
lines=0 prev=-1 cur=0
for ((i = 0; i < 480; i++)); do
  kill -0 "$RUN_PID" 2>/dev/null || die "colony run exited: $(tail -5 "$DIR/colony-run.err")"
  n=$(grep -c observations "$DIR/colony-run.err" || true)
  if ((n > lines)); then
    lines=$n cur=$(observations); cur=${cur:-0}
    ((cur >= NODES && cur == prev)) && break
    prev=$cur
  fi
  sleep 0.5
done
((cur >= NODES)) || die "colony run observed $cur events, want >= $NODES nodes"
say "colony run has observed the nodes ($cur observations, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the first create)"

if ((INIT_PODS > 0)); then
  INIT_JSON=$("$LOAD" pods -ns bench -n "$INIT_PODS" -c "$WORKERS" -prefix init-pod-) || die "init pods"
  say "init pods: $INIT_JSON"
fi

c_run0=$(cpu_s "$RUN_PID") c_api0=$(cpu_s "$API_PID") c_etcd0=$(cpu_s "$ETCD_PID")
RES=$("$LOAD" pods -ns bench -n "$PODS" -c "$WORKERS" -prefix pod-) || die "measured pods"
c_run=$(awk -v a="$c_run0" -v b="$(cpu_s "$RUN_PID")" 'BEGIN { printf "%.1f", b - a }')
c_api=$(awk -v a="$c_api0" -v b="$(cpu_s "$API_PID")" 'BEGIN { printf "%.1f", b - a }')
c_etcd=$(awk -v a="$c_etcd0" -v b="$(cpu_s "$ETCD_PID")" 'BEGIN { printf "%.1f", b - a }')
rss_run=$(hwm_mib "$RUN_PID") rss_api=$(hwm_mib "$API_PID") rss_etcd=$(hwm_mib "$ETCD_PID")
say "measured pods: $RES"
echo "$RES" >"$DIR/colony-result.json"
kill "$RUN_PID"; wait "$RUN_PID" 2>/dev/null || true
RUN_PID=""
say "colony run summary: $(cat "$DIR/colony-run.out")"
bash "$KUBE_SH" stop --dir "$DIR/kube" >/dev/null 2>&1 || true

jget() { PYENV_VERSION=system python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
TPUT=$(jget "$RES" end_to_end_per_second)
SPAN=$(jget "$RES" end_to_end_seconds)
fi

# ---------------------------------------------------------------- scheduler_perf
SP_TPUT=""
if ((SKIP_SP == 0)); then
  SPC="$CACHE/kube-1.34.3/scheduler-perf"
  SPT="$SPC/scheduler_perf_misc.test"
  MOD="$CACHE/gomod/k8s.io/kubernetes@v1.34.3"
  mkdir -p "$SPC"
  if [[ ! -x "$SPT" ]]; then
    need_go
    say "building scheduler_perf_misc.test (once; log $SPC/build.log)"
    ( cd "$CACHE/kube-1.34.3/src" &&
      GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gobuild" GOTOOLCHAIN=local CGO_ENABLED=0 \
        nice -n 10 "$GO" test -c -mod=mod -p 2 -vet=off -trimpath -o "$SPT.tmp.$$" \
        k8s.io/kubernetes/test/integration/scheduler_perf/misc ) >"$SPC/build.log" 2>&1 ||
      die "scheduler_perf build failed (tail: $(tail -5 "$SPC/build.log"))"
    mv "$SPT.tmp.$$" "$SPT"
  fi
  # A writable copy of the package folder and its templates; the apiserver's test fixtures
  # where a -trimpath build looks for them (TEST_SRCDIR/TEST_WORKSPACE fallback).
  W="$DIR/scheduler-perf"
  mkdir -p "$W/src/test/integration/scheduler_perf" "$W/out"
  cp -r "$MOD/test/integration/scheduler_perf/misc" "$MOD/test/integration/scheduler_perf/templates" \
    "$W/src/test/integration/scheduler_perf/"
  mkdir -p "$W/runfiles/ws/k8s.io/kubernetes@v1.34.3/cmd/kube-apiserver/app/testing"
  cp -r "$MOD/cmd/kube-apiserver/app/testing/testdata" "$W/runfiles/ws/k8s.io/kubernetes@v1.34.3/cmd/kube-apiserver/app/testing/"
  chmod -R u+w "$W"
  say "running scheduler_perf SchedulingBasic/5000Nodes_10000Pods (a few minutes)"
  sp_t0=$(date +%s)
  ( cd "$W/src/test/integration/scheduler_perf/misc" &&
    PATH="$CACHE/etcd-3.6.4/bin:$PATH" TEST_SRCDIR="$W/runfiles" TEST_WORKSPACE=ws \
      "$SPT" -test.run '^$' -test.bench '^BenchmarkPerfScheduling$/^SchedulingBasic$/^5000Nodes_10000Pods$' \
      -test.benchtime=1ns -test.timeout=60m -perf-scheduling-label-filter=performance \
      -data-items-dir="$W/out" ) >"$W/run.log" 2>&1 || say "scheduler_perf exited non-zero (SchedulingBasic fails below its CI threshold of 270 pods/s, which this workload missed on a 2-core machine; see $W/run.log)"
  say "scheduler_perf took $(( $(date +%s) - sp_t0 )) s"
  SP_JSON=$(ls "$W"/out/BenchmarkPerfScheduling_*.json 2>/dev/null | head -n1 || true)
  [[ -n "$SP_JSON" ]] || die "scheduler_perf wrote no JSON (tail: $(tail -5 "$W/run.log"))"
  SP_TPUT=$(PYENV_VERSION=system python3 - "$SP_JSON" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for item in d.get("dataItems", []):
    if item.get("labels", {}).get("Metric") == "SchedulingThroughput":
        print(round(item["data"]["Average"], 1)); break
PY
)
  say "scheduler_perf SchedulingThroughput average: $SP_TPUT pods/s ($SP_JSON)"
fi

# ---------------------------------------------------------------- summary
{
  echo
  echo "== bench-cluster: $NODES nodes, $INIT_PODS init + $PODS measured pods, $WORKERS creators, $(nproc) CPUs =="
  if ((SKIP_COLONY == 0)); then
  printf '%-44s %s\n' "colony end-to-end throughput (pods/s)" "$TPUT  ($PODS pods in $SPAN s, first POST -> last binding seen)"
  printf '%-44s %s\n' "creation alone (pods/s)" "$(jget "$RES" create_per_second)  ($(jget "$RES" create_seconds) s, $(jget "$RES" create_retries) retried)"
  printf '%-44s %s\n' "bound after the last create answered (s)" "$(jget "$RES" bound_after_last_ack_s)"
  printf '%-44s %s\n' "per pod, POST sent -> binding seen (ms)" "p50 $(jget "$RES" latency_ms_p50)  p90 $(jget "$RES" latency_ms_p90)  p99 $(jget "$RES" latency_ms_p99)  max $(jget "$RES" latency_ms_max)"
  printf '%-44s %s\n' "CPU s in the measured phase" "colony run $c_run, kube-apiserver $c_api, etcd $c_etcd, creator $(jget "$RES" creator_cpu_seconds)"
  printf '%-44s %s\n' "peak RSS (MiB)" "colony run $rss_run, kube-apiserver $rss_api, etcd $rss_etcd"
  fi
  [[ -n "$SP_TPUT" ]] && printf '%-44s %s\n' "scheduler_perf 5000Nodes_10000Pods (pods/s)" "$SP_TPUT"
  if [[ -n "$SP_TPUT" && -n "$TPUT" ]]; then
    printf '%-44s %s\n' "ratio colony / scheduler_perf" "$(awk -v a="$TPUT" -v b="$SP_TPUT" 'BEGIN { printf "%.2fx", a / b }')  (goal >= 3x)"
  fi
  echo "run folder: $DIR"
} | tee "$DIR/summary.txt"
