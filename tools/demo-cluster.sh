#!/usr/bin/env bash
# tools/demo-cluster.sh — cluster mode on one machine, end to end (docs/kubernetes-bridge.md).
#
# Starts a real etcd + kube-apiserver (tools/peers/kube.sh), installs Colony's CRDs (deploy/crds),
# deploy/'s namespaces and RBAC, Koordinator's PriorityClasses, an slo-controller-config ConfigMap
# with co-location on and a node strategy for one node pool, and a ClusterColocationProfile that
# makes pods labelled koordinator.sh/enable-colocation=true batch pods; registers 3 nodes; runs
# `colony run` under the colony-manager ServiceAccount's token (deploy/'s least-privilege RBAC,
# a TokenRequest), with leader election and its admission webhooks; shows each node's NodeSLO
# (the pool's node strategy on one), publishes a NodeMetric report per node, waits until the nodes
# carry kubernetes.io/batch-cpu, submits LS pods and plain pods (cpu and memory requests, no batch
# resources) labelled for co-location, shows with kubectl that the webhook made the latter BE
# pods asking for kubernetes.io/batch-cpu and -memory, and that every pod is bound. Then
# `colony koordlet --enforce` runs for demo-node-0 under the colony-koordlet ServiceAccount's token
# (deploy/koordlet/rbac.yaml): the demo has no kubelet, so it makes a kubepods tree for that node's
# bound pods (cgroup directories named by their uids) under a temporary parent in the machine's
# cgroup v1 hierarchy when it may (root), else a fake tree in the demo folder, and says which; the
# koordlet's NodeMetric names the pods (kubectl get nodemetric), and on real cgroups its BE CPU
# suppression is read back from the BE tier's cpu.cfs_quota_us. Exit 0 only if all of that holds.
# Needs build/colony (tools/setup.sh).
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
KOORDLET_PID=""
CG_PARENT=""  # the temporary kubepods parent in the real cgroup hierarchy, when made
cleanup() {
  [[ -n "$RUN_PID" ]] && kill "$RUN_PID" 2>/dev/null && wait "$RUN_PID" 2>/dev/null || true
  [[ -n "$KOORDLET_PID" ]] && kill "$KOORDLET_PID" 2>/dev/null && wait "$KOORDLET_PID" 2>/dev/null || true
  if [[ -n "$CG_PARENT" ]]; then  # deepest directories first
    for c in cpu cpuacct memory; do
      find "/sys/fs/cgroup/$c/$CG_PARENT" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  fi
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
# deploy/'s namespaces (colony-system, koordinator-system) and RBAC; no Deployment (no kubelet).
k apply -f "$ROOT/deploy/colony/00-namespaces.yaml" -f "$ROOT/deploy/colony/10-rbac.yaml" >/dev/null
k create namespace demo >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata: {name: colocation-demo}
spec:
  selector: {matchLabels: {koordinator.sh/enable-colocation: "true"}}
  qosClass: BE
  priorityClassName: koord-batch
  schedulerName: koord-scheduler
YAML
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  colocation-config: '{"enable": true}'
  resource-threshold-config: '{"clusterStrategy": {"enable": true, "cpuSuppressPolicy": "cfsQuota"}, "nodeStrategies": [{"name": "batch-pool", "nodeSelector": {"matchLabels": {"pool": "batch"}}, "cpuSuppressThresholdPercent": 40}]}'
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

# colony run as deploy/ runs it: the colony-manager ServiceAccount's token (TokenRequest) and
# nothing more.
TOKEN=$(k -n colony-system create token colony-manager --duration=1h)
eval "$(bash "$KUBE_SH" env --dir "$DIR/kube" | grep -E '^KUBE_(API|CA)=')"
SAKC="$DIR/colony-manager.kubeconfig"
cat >"$SAKC" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: demo, cluster: {server: "$KUBE_API", certificate-authority: "$KUBE_CA"}}]
users: [{name: colony-manager, user: {token: "$TOKEN"}}]
contexts: [{name: colony-manager, context: {cluster: demo, user: colony-manager}}]
current-context: colony-manager
EOF
chmod 600 "$SAKC"
"$COLONY" run --kubeconfig "$SAKC" --log "$DIR/colony-log" --leader-elect \
  --webhook-addr 127.0.0.1:0 >"$DIR/colony-run.out" 2>"$DIR/colony-run.err" &
RUN_PID=$!
say "colony run started as system:serviceaccount:colony-system:colony-manager (pid $RUN_PID, log $DIR/colony-log)"

# What each node's koordlet would report (docs/koordlet.md: not yet run here): 2 cores and 4 GiB in use.
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
    [[ -z "$RUN_PID" ]] || kill -0 "$RUN_PID" 2>/dev/null || die "colony run exited: $(tail -5 "$DIR/colony-run.err")"
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

webhooks_registered() {
  grep -q "serving admission webhooks" "$DIR/colony-run.err" &&
    k get mutatingwebhookconfiguration colony-mutating-webhook-configuration >/dev/null 2>&1
}
wait_for 60 "the admission webhooks registered" webhooks_registered
say "colony run leads (Lease colony-system/$(k -n colony-system get lease colony-manager -o 'jsonpath={.metadata.name} held by {.spec.holderIdentity}')) and serves its webhooks"

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
  # A plain pod: cpu and memory, no QoS, no priority class; the profile's label only.
  k create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: be-$i, namespace: demo, labels: {koordinator.sh/enable-colocation: "true"}}
spec:
  containers: [{name: job, image: registry.invalid/job:1, resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}}]
YAML
done
say "6 LS pods and 6 plain pods labelled for co-location submitted; as the apiserver stored them:"
k get pods -n demo -o 'custom-columns=POD:.metadata.name,QOS:.metadata.labels.koordinator\.sh/qosClass,PRIORITY-CLASS:.spec.priorityClassName,PRIORITY:.spec.priority,SCHEDULER:.spec.schedulerName,REQUESTS:.spec.containers[0].resources.requests' >&2
for i in 0 1 2 3 4 5; do
  got=$(k get pod -n demo "be-$i" -o 'jsonpath={.metadata.labels.koordinator\.sh/qosClass}/{.spec.priorityClassName}/{.spec.schedulerName}/{.spec.containers[0].resources.requests.kubernetes\.io/batch-cpu}/{.spec.containers[0].resources.requests.kubernetes\.io/batch-memory}/{.spec.containers[0].resources.requests.cpu}')
  [[ "$got" == "BE/koord-batch/koord-scheduler/1k/1Gi/" ]] ||
    die "be-$i was not made a batch pod by the webhook (qos/class/scheduler/batch-cpu/batch-memory/cpu: $got)"
  got=$(k get pod -n demo "ls-$i" -o 'jsonpath={.metadata.labels.koordinator\.sh/qosClass}/{.spec.containers[0].resources.requests.cpu}')
  [[ "$got" == "LS/2" ]] || die "ls-$i was changed: $got"
done
say "the webhook made every labelled pod a BE pod asking for batch resources; LS pods untouched"
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

# ---- the koordlet of demo-node-0 (docs/koordlet.md "In a cluster")
KNODE=demo-node-0
k apply -f "$ROOT/deploy/koordlet/rbac.yaml" >/dev/null
KTOKEN=$(k -n colony-system create token colony-koordlet --duration=1h)
KKC="$DIR/colony-koordlet.kubeconfig"
sed -e "s/colony-manager/colony-koordlet/g" -e "s|token: \".*\"|token: \"$KTOKEN\"|" "$SAKC" >"$KKC"
chmod 600 "$KKC"
# The pods bound to it, as a kubelet would have made their cgroups (cgroupfs names).
mapfile -t KPODS < <(k get pods -A --field-selector "spec.nodeName=$KNODE" \
  -o 'jsonpath={range .items[*]}{.metadata.uid} {.status.qosClass} {.metadata.name}{"\n"}{end}')
tier_of() { case $1 in Guaranteed) echo "" ;; Burstable) echo burstable/ ;; *) echo besteffort/ ;; esac; }
PARENT="colony-demo-$$"
if [[ -w /sys/fs/cgroup/cpu && -d /sys/fs/cgroup/cpuacct && -d /sys/fs/cgroup/memory && ! -e /sys/fs/cgroup/cgroup.controllers ]] &&
   mkdir "/sys/fs/cgroup/cpu/$PARENT" 2>/dev/null; then
  CG_PARENT=$PARENT
  for c in cpu cpuacct memory; do
    mkdir -p "/sys/fs/cgroup/$c/$PARENT/kubepods/burstable" "/sys/fs/cgroup/$c/$PARENT/kubepods/besteffort"
    for line in "${KPODS[@]}"; do
      read -r uid qos _ <<<"$line"
      mkdir -p "/sys/fs/cgroup/$c/$PARENT/kubepods/$(tier_of "$qos")pod$uid"
    done
  done
  CG_ARGS=(--cgroup-root /sys/fs/cgroup --kube-parent "$PARENT")
  say "cgroups: a real cgroup v1 kubepods tree under /sys/fs/cgroup/{cpu,cpuacct,memory}/$PARENT (removed at exit); /proc is this machine's"
else
  FAKE="$DIR/fake-node"
  mkdir -p "$FAKE/proc"
  { echo "cpu  1000 0 0 5000 0 0 0 0 0 0"; for ((i = 0; i < 16; i++)); do echo "cpu$i 0 0 0 0 0 0 0 0 0 0"; done; } >"$FAKE/proc/stat"
  printf 'MemTotal:       33554432 kB\nMemFree:         1000 kB\nMemAvailable:   29360128 kB\n' >"$FAKE/proc/meminfo"
  for line in "${KPODS[@]}"; do
    read -r uid qos _ <<<"$line"
    d="kubepods/$(tier_of "$qos")pod$uid"
    mkdir -p "$FAKE/cgroup/cpu/$d" "$FAKE/cgroup/cpuacct/$d" "$FAKE/cgroup/memory/$d"
    echo 0 >"$FAKE/cgroup/cpuacct/$d/cpuacct.usage"
    echo 268435456 >"$FAKE/cgroup/memory/$d/memory.usage_in_bytes"
    printf 'total_inactive_anon 0\ntotal_active_anon 268435456\ntotal_inactive_file 0\ntotal_unevictable 0\n' >"$FAKE/cgroup/memory/$d/memory.stat"
  done
  mkdir -p "$FAKE/cgroup/cpu/kubepods/besteffort"
  CG_ARGS=(--cgroup-root "$FAKE/cgroup" --proc-root "$FAKE/proc")
  say "cgroups: not writable here, so a FAKE kubepods tree and /proc under $FAKE"
fi
"$COLONY" koordlet --node "$KNODE" --kubeconfig "$KKC" --log "$DIR/koordlet-log" --enforce \
  "${CG_ARGS[@]}" --interval 500ms --report-every 2s >"$DIR/koordlet.out" 2>"$DIR/koordlet.err" &
KOORDLET_PID=$!
say "colony koordlet --enforce started for $KNODE as system:serviceaccount:colony-system:colony-koordlet (pid $KOORDLET_PID, log $DIR/koordlet-log)"
koordlet_reported() {
  kill -0 "$KOORDLET_PID" 2>/dev/null || die "colony koordlet exited: $(tail -5 "$DIR/koordlet.err")"
  [[ $(k get nodemetric "$KNODE" -o 'jsonpath={range .status.podsMetric[*]}{.name}{"\n"}{end}' 2>/dev/null | grep -c .) -eq ${#KPODS[@]} ]]
}
wait_for 30 "the koordlet's NodeMetric naming the node's ${#KPODS[@]} pods" koordlet_reported
say "kubectl get nodemetric $KNODE (written by the koordlet: status.podsMetric by namespace/name):"
k get nodemetric "$KNODE" -o 'jsonpath={"updateTime: "}{.status.updateTime}{"\nnodeUsage: "}{.status.nodeMetric.nodeUsage.resources}{"\n"}{range .status.podsMetric[*]}{"  "}{.namespace}/{.name}{"  qos "}{.qos}{"  priority "}{.priority}{"  usage "}{.podUsage.resources}{"\n"}{end}' >&2
if [[ -n "$CG_PARENT" ]]; then
  quota_written() { grep -q "cpu.cfs_quota_us" <("$COLONY" log dump --log "$DIR/koordlet-log" 2>/dev/null | grep CgroupUpdated); }
  # The log is the koordlet's (RocksDB locks it): read it after the koordlet stops.
  sleep 2
fi
kill "$KOORDLET_PID"; wait "$KOORDLET_PID" 2>/dev/null || true
KOORDLET_PID=""
grep -E "eviction|FAILED|not reachable" "$DIR/koordlet.err" >&2 || true
if [[ -n "$CG_PARENT" ]]; then
  Q="/sys/fs/cgroup/cpu/$CG_PARENT/kubepods/besteffort/cpu.cfs_quota_us"
  say "the BE tier's $Q holds $(cat "$Q") (the koordlet's cfsQuota suppression, read back and logged):"
  "$COLONY" log dump --log "$DIR/koordlet-log" | grep '"CgroupUpdated"' | tail -n 1 | cut -c1-300 >&2
  quota_written || die "no CgroupUpdated with cpu.cfs_quota_us in the koordlet's log"
fi
say "OK: under deploy/'s RBAC, every node has its NodeSLO and kubernetes.io/batch-cpu, the webhook made the labelled pods batch pods, every pod is bound, and $KNODE's koordlet reported its pods by name"
