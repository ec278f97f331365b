#!/usr/bin/env bash
# tools/demo-cluster.sh — cluster mode on one machine, end to end (docs/kubernetes-bridge.md).
#
# Starts a real etcd + kube-apiserver (tools/peers/kube.sh), installs the NodeMetric and NodeSLO
# CRDs (deploy/crds), Koordinator's PriorityClasses and an slo-controller-config ConfigMap with
# co-location on and a node strategy for one node pool, registers 3 nodes, runs `colony run`,
# shows each node's NodeSLO (the pool's node strategy on one), publishes a NodeMetric report per
# node, waits until the nodes carry kubernetes.io/batch-cpu, submits LS pods and BE pods that ask
# for batch resources, and shows with kubectl that every pod is bound. Exit 0 only if all of that
# holds. Needs build/colony (tools/setup.sh).
#   DEMO_DIR=dir   where the apiserver, the log and the logs go (default: a new temp folder)
#   COLONY=path    the colony binary (default: build/colony)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/colony-demo.XXXXXX")}
KUBE_SH="$ROOT/tools/peers/kube.sh"
COLONY=${COLONY:-$ROOT/build/colony}
export PYENV_VERSION=${PYENV_VERSION:-system}
say() { echo "demo: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
[[ -x "$COLONY" ]] || die "$COLONY is missing (run tools/setup.sh)"

RUN_PID=""
cleanup() {
  [[ -n "$RUN_PID" ]] && kill "$RUN_PID" 2>/dev/null && wait "$RUN_PID" 2>/dev/null || true
  bash "$KUBE_SH" stop --dir "$DIR/kube" >/dev/null 2>&1 || true
}
trap cleanup EXIT

bash "$KUBE_SH" install >/dev/null
KUBECONFIG=$(bash "$KUBE_SH" start --dir "$DIR/kube")
export KUBECONFIG
KUBECTL=$(bash "$KUBE_SH" env --dir "$DIR/kube" | sed -n 's/^KUBECTL=//p')
k() { "$KUBECTL" "$@"; }
say "apiserver up ($KUBECONFIG)"

bash "$KUBE_SH" apply-crds --dir "$DIR/kube" "$ROOT/deploy/crds" >/dev/null
bash "$KUBE_SH" priority-classes --dir "$DIR/kube" >/dev/null
k create namespace koordinator-system >/dev/null
k create namespace demo >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  colocation-config: '{"enable": true}'
  resource-threshold-config: '{"clusterStrategy": {"enable": true}, "nodeStrategies": [{"name": "batch-pool", "nodeSelector": {"matchLabels": {"pool": "batch"}}, "cpuSuppressThresholdPercent": 40}]}'
YAML

NODES=(demo-node-0 demo-node-1 demo-node-2)
for n in "${NODES[@]}"; do
  k create -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata: {name: $n, labels: {kubernetes.io/hostname: $n, pool: $([[ $n == demo-node-2 ]] && echo batch || echo online)}}
status:
  capacity: {cpu: "16", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "16", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
YAML
done
say "3 nodes registered"

"$COLONY" run --kubeconfig "$KUBECONFIG" --log "$DIR/colony-log" >"$DIR/colony-run.out" 2>"$DIR/colony-run.err" &
RUN_PID=$!
say "colony run started (pid $RUN_PID, log $DIR/colony-log)"

# What each node's koordlet would report (issue 15 runs a real one): 2 cores and 4 GiB in use.
publish_metrics() {
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for n in "${NODES[@]}"; do
    k apply -f - >/dev/null <<YAML
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: $n}
spec: {metricCollectPolicy: {aggregateDurationSeconds: 300, reportIntervalSeconds: 60}}
YAML
    k patch nodemetric "$n" --subresource=status --type=merge -p \
      "{\"status\": {\"updateTime\": \"$now\", \"nodeMetric\": {\"nodeUsage\": {\"resources\": {\"cpu\": \"2\", \"memory\": \"4Gi\"}}}, \"podsMetric\": []}}" >/dev/null
  done
}
publish_metrics
say "NodeMetric reports published"

wait_for() {   # $1 seconds, $2 description, rest: a test command
  local limit=$1 what=$2; shift 2
  for ((i = 0; i < limit * 2; i++)); do
    if "$@"; then return 0; fi
    kill -0 "$RUN_PID" 2>/dev/null || die "colony run exited: $(tail -5 "$DIR/colony-run.err")"
    sleep 0.5
  done
  die "$what not reached in ${limit}s (colony run stderr: $(tail -5 "$DIR/colony-run.err"))"
}
batch_on_all_nodes() {
  local n v
  for n in "${NODES[@]}"; do
    v=$(k get node "$n" -o 'jsonpath={.status.allocatable.kubernetes\.io/batch-cpu}')
    [[ -n "$v" && "$v" != "0" ]] || return 1
  done
}
nodeslo_on_all_nodes() {
  local n v
  for n in "${NODES[@]}"; do
    v=$(k get nodeslo "$n" -o 'jsonpath={.spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent}' 2>/dev/null) || return 1
    [[ -n "$v" ]] || return 1
  done
}
wait_for 60 "a NodeSLO for every node" nodeslo_on_all_nodes
say "each node's NodeSLO (demo-node-2 is in pool=batch, whose node strategy suppresses at 40 %):"
k get nodeslo -o 'custom-columns=NODESLO:.metadata.name,BE-THRESHOLD-ENABLE:.spec.resourceUsedThresholdWithBE.enable,CPU-SUPPRESS-%:.spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent,CPU-BURST:.spec.cpuBurstStrategy.policy' >&2
[[ $(k get nodeslo demo-node-2 -o 'jsonpath={.spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent}') == 40 ]] ||
  die "demo-node-2's NodeSLO does not carry its pool's node strategy"
[[ $(k get nodeslo demo-node-0 -o 'jsonpath={.spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent}') == 65 ]] ||
  die "demo-node-0's NodeSLO does not carry the cluster strategy"

wait_for 60 "kubernetes.io/batch-cpu on every node" batch_on_all_nodes
say "nodes carry batch resources:"
k get nodes -o 'custom-columns=NODE:.metadata.name,CPU:.status.allocatable.cpu,BATCH-CPU:.status.allocatable.kubernetes\.io/batch-cpu,BATCH-MEMORY:.status.allocatable.kubernetes\.io/batch-memory' >&2

for i in 0 1 2 3 4 5; do
  k create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: ls-$i, namespace: demo, labels: {koordinator.sh/qosClass: LS}}
spec:
  schedulerName: koord-scheduler
  priorityClassName: koord-prod
  containers: [{name: app, image: registry.invalid/app:1, resources: {requests: {cpu: "2", memory: 2Gi}, limits: {cpu: "2", memory: 2Gi}}}]
YAML
  k create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: be-$i, namespace: demo, labels: {koordinator.sh/qosClass: BE}}
spec:
  schedulerName: koord-scheduler
  priorityClassName: koord-batch
  containers: [{name: job, image: registry.invalid/job:1, resources: {requests: {kubernetes.io/batch-cpu: "1k", kubernetes.io/batch-memory: 1Gi}, limits: {kubernetes.io/batch-cpu: "1k", kubernetes.io/batch-memory: 1Gi}}}]
YAML
done
say "6 LS and 6 BE pods submitted"
all_bound() {
  local out
  out=$(k get pods -n demo -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}')
  [[ $(grep -c . <<<"$out") -eq 12 ]]
}
wait_for 60 "every pod bound" all_bound
k get pods -n demo -o wide >&2
kill "$RUN_PID"; wait "$RUN_PID" 2>/dev/null || true
RUN_PID=""
say "colony run summary: $(cat "$DIR/colony-run.out")"
say "OK: every node has its NodeSLO, every pod is bound and every node carries kubernetes.io/batch-cpu"
