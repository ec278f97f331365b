#!/usr/bin/env bash
# tests/run/deploy_rbac_kube_test.sh — deploy/ against a real kube-apiserver 1.34 (tools/peers/kube.sh):
#  1. every manifest is accepted: `kubectl apply --dry-run=server`, then for real, in order
#     (namespaces and CRDs first: a server dry run of an object in a namespace that does not
#     exist yet is refused); the Kafka overlay and deploy/koordlet by server dry run (its RBAC
#     applied, its DaemonSet's flags checked against `colony koordlet --help`);
#  2. colony run, under a TokenRequest token of ServiceAccount colony-system/colony-manager and
#     nothing else, does its whole job without one 403: binds every pod, writes an unschedulable
#     pod's condition and FailedScheduling Event, nodes' batch resources, NodeSLOs (created, then
#     updated after a ConfigMap change), an ElasticQuota's runtime and a Reservation's status;
#     all its informers sync
#     (every kind's CRD is installed, none skipped); the run summary shows zero write failures,
#     the log holds no WriteFailed, stderr names no Forbidden;
#  3. `kubectl auth can-i --as=system:serviceaccount:colony-system:colony-manager` allows what
#     colony run needs and denies a table of what it must not do; the same for
#     colony-system:colony-koordlet and `colony koordlet --in-cluster`;
#  4. deploy/descheduler: the overlay by server dry run, its flags and DeschedulerConfiguration
#     accepted by colony run, its ClusterRole applied and checked with `kubectl auth can-i`, and
#     colony run --descheduler-config under the token: a user's PodMigrationJob and a LowNodeLoad
#     job end Succeeded (get, create, status update, eviction), no write failed, no 403.
# Skipped (exit 77) only when kube.sh's binaries are not installed. Needs COLONY (the colony
# binary; default build/colony), curl, python3. COLONY_TEST_KEEP=1 keeps the work folder;
# COLONY_TEST_WAIT (default 60) bounds each wait in seconds. COLONY_DEPLOY_DIR runs it over
# another copy of deploy/ (how a rule is shown to be needed: remove it there, the test fails
# with a 403 naming the resource; docs/operating.md "Deploying to a cluster").
# Last line is exactly "N passed, M failed"; exit status 0 iff M == 0.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K="$ROOT/tools/peers/kube.sh"
DEPLOY=${COLONY_DEPLOY_DIR:-$ROOT/deploy}
COLONY=${COLONY:-$ROOT/build/colony}
CACHE=${COLONY_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colony/peers}
SA=system:serviceaccount:colony-system:colony-manager
NS=colony-deploy
WAIT=${COLONY_TEST_WAIT:-60}   # seconds per wait (a passing run needs a few; the sweep uses less)
export PYENV_VERSION=${PYENV_VERSION:-system}
PASS=0 FAIL=0
T0=$(date +%s.%N)

for b in "$CACHE"/kube-*/bin/kube-apiserver "$CACHE"/kube-*/bin/kubectl "$CACHE"/etcd-*/bin/etcd; do
  [[ -x "$b" ]] || { echo "SKIP: kube-apiserver/kubectl/etcd not installed under $CACHE (tools/peers/kube.sh install)"; exit 77; }
done
[[ -x "$COLONY" ]] || { echo "FAIL: no colony binary at $COLONY (set COLONY)"; echo "0 passed, 1 failed"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/deploy-rbac-test.XXXXXX")
D="$WORK/kube"
RUN_PID=""
cleanup() {
  if [[ -n "$RUN_PID" ]] && kill -0 "$RUN_PID" 2>/dev/null; then kill "$RUN_PID"; wait "$RUN_PID" 2>/dev/null; fi
  KUBE_STOP_TIMEOUT=5 bash "$K" stop --dir "$D" >/dev/null 2>&1
  if [[ -n "${COLONY_TEST_KEEP:-}" ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { PASS=$((PASS + 1)); echo "PASS: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
check_eq() { if [[ "$2" == "$3" ]]; then ok "$1"; else bad "$1 (got '$2', want '$3')"; fi; }
finish() {
  echo "wall $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  echo "$PASS passed, $FAIL failed"; [[ $FAIL -eq 0 ]]; exit $?
}
must() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; finish; fi; }
# wait_for SECONDS WHAT CMD...: polls every 0.5 s; a colony run that exits ends the wait.
wait_for() {
  local limit=$1 what=$2 i; shift 2
  for ((i = 0; i < limit * 2; i++)); do
    if "$@"; then ok "$what"; return 0; fi
    [[ -n "$RUN_PID" ]] && ! kill -0 "$RUN_PID" 2>/dev/null && break
    sleep 0.5
  done
  bad "$what (not within ${limit}s; colony run stderr tail: $(tail -n 5 "${RUN_ERR:-$WORK/run.err}" 2>/dev/null | tr '\n' ' '))"
  return 1
}

# ---- the apiserver (RBAC on, ServiceAccount signing key: TokenRequest works)
KC=$(bash "$K" start --dir "$D" 2>"$WORK/kube.err") || { cat "$WORK/kube.err"; must "kube.sh start" false; }
ENV=$(bash "$K" env --dir "$D")
for v in KUBE_API KUBE_CA KUBECTL; do
  line=$(grep "^$v=" <<<"$ENV") && printf -v "$v" '%s' "${line#*=}"
done
admin() { "$KUBECTL" --kubeconfig "$KC" --cache-dir "$WORK/kubectl-cache" "$@"; }
bash "$K" priority-classes --dir "$D" >/dev/null 2>&1 || bad "kube.sh priority-classes"

# ---- 1. the manifests, in order
ns_file="$DEPLOY/colony/00-namespaces.yaml"
out=$( { admin apply --dry-run=server -f "$ns_file" && admin apply --dry-run=server -k "$DEPLOY/crds"; } 2>&1); rc=$?
check "server dry run of the namespaces and deploy/crds (rc $rc)" test "$rc" -eq 0
[[ $rc -eq 0 ]] || echo "$out"
out=$( { admin apply -f "$ns_file" && admin apply -k "$DEPLOY/crds"; } 2>&1); rc=$?
must "apply the namespaces and deploy/crds ($(grep -c . <<<"$out") objects)" test "$rc" -eq 0
[[ $rc -eq 0 ]] || echo "$out"
mapfile -t crds < <(admin get -k "$DEPLOY/crds" -o name 2>/dev/null)
out=$(admin wait --for condition=established --timeout=60s "${crds[@]}" 2>&1)
check "the ${#crds[@]} CRDs of deploy/crds are Established" test $? -eq 0 -a "${#crds[@]}" -ge 9
out=$(admin apply --dry-run=server -k "$DEPLOY" 2>&1); rc=$?
n_dry=$(grep -c '(server dry run)' <<<"$out")
check "server dry run of kustomization deploy/ (rc $rc, $n_dry objects)" test "$rc" -eq 0
[[ $rc -eq 0 ]] || echo "$out"
out=$(admin apply -k "$DEPLOY" 2>&1); rc=$?
n_real=$(grep -cE ' (created|configured|unchanged)$' <<<"$out")
must "apply -k deploy/ ($n_real objects)" test "$rc" -eq 0
check_eq "every object of the server dry run was applied" "$n_real" "$n_dry"
for obj in deployment/colony-manager service/colony-webhook-service service/colony-metrics \
           serviceaccount/colony-manager serviceaccount/colony-koordlet persistentvolumeclaim/colony-log; do
  check "$obj exists in colony-system" admin -n colony-system get "$obj" -o name
done
check_eq "colony-webhook-service: 443 -> 9443" \
  "$(admin -n colony-system get service colony-webhook-service -o 'jsonpath={.spec.ports[0].port}->{.spec.ports[0].targetPort}')" "443->9443"
check_eq "the Deployment runs one replica (its log's volume is ReadWriteOnce)" \
  "$(admin -n colony-system get deployment colony-manager -o 'jsonpath={.spec.replicas}/{.spec.strategy.type}')" "1/Recreate"
if [[ -d "$DEPLOY/kafka" ]]; then
  out=$(admin apply --dry-run=server -k "$DEPLOY/kafka" 2>&1); rc=$?
  check "server dry run of the Kafka overlay (rc $rc)" test "$rc" -eq 0
  [[ $rc -eq 0 ]] || echo "$out"
  check "the overlay's Deployment logs to kafka:// with --state" \
    grep -q -- '--log=kafka://.*--state=' <<<"$(admin kustomize "$DEPLOY/kafka" 2>&1 | tr '\n' ' ')"
fi
if [[ -d "$DEPLOY/koordlet" ]]; then
  out=$(admin apply --dry-run=server -k "$DEPLOY/koordlet" 2>&1); rc=$?
  check "server dry run of deploy/koordlet (DaemonSet and RBAC) (rc $rc)" test "$rc" -eq 0
  [[ $rc -eq 0 ]] || echo "$out"
  # Its RBAC only (no DaemonSet: this cluster has no kubelet to run it).
  out=$(admin apply -f "$DEPLOY/koordlet/rbac.yaml" 2>&1); rc=$?
  check "apply deploy/koordlet/rbac.yaml (rc $rc)" test "$rc" -eq 0
  # Every colony koordlet flag the DaemonSet passes exists.
  khelp=$("$COLONY" koordlet --help 2>&1)
  for f in $(admin kustomize "$DEPLOY/koordlet" 2>/dev/null | sed -n 's/^ *- \(--[a-z-]*\).*/\1/p'); do
    check "the DaemonSet's $f is a colony koordlet flag" grep -q -- "$f" <<<"$khelp"
  done
fi
# Every colony run flag the Deployment passes exists.
help=$("$COLONY" run --help 2>&1)
flags=$(admin -n colony-system get deployment colony-manager -o 'jsonpath={.spec.template.spec.containers[0].args[*]}' |
        tr ' ' '\n' | sed -n 's/^\(--[a-z-]*\).*/\1/p')
for f in $flags; do
  check "the Deployment's $f is a colony run flag" grep -q -- "$f" <<<"$help"
done

# ---- 2. colony run under the ServiceAccount's token
TOKEN=$(admin -n colony-system create token colony-manager --duration=2h 2>&1)
must "TokenRequest for colony-system/colony-manager" test -n "$TOKEN" -a "${TOKEN%%.*}" != "$TOKEN"
SAKC="$WORK/colony-manager.kubeconfig"
cat >"$SAKC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: colony-test
  cluster: {server: "$KUBE_API", certificate-authority: "$KUBE_CA"}
users:
- name: colony-manager
  user: {token: "$TOKEN"}
contexts:
- name: colony-manager
  context: {cluster: colony-test, user: colony-manager}
current-context: colony-manager
EOF
chmod 600 "$SAKC"
sa() { "$KUBECTL" --kubeconfig "$SAKC" --cache-dir "$WORK/kubectl-cache-sa" "$@"; }
check_eq "the token authenticates as the ServiceAccount" \
  "$(sa auth whoami -o 'jsonpath={.status.userInfo.username}' 2>&1)" "$SA"
if out=$(sa -n default run x --image=registry.invalid/x --dry-run=server 2>&1); then
  bad "the ServiceAccount may not create pods (RBAC is in force): $out"
else
  ok "the ServiceAccount may not create pods (RBAC is in force): ${out:0:120}"
fi

# What a user does: a namespace, an ElasticQuota, nodes and their NodeMetrics, pods.
admin create namespace "$NS" >/dev/null
admin apply -f - >/dev/null <<EOF
apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: team-a, namespace: $NS}
spec:
  min: {cpu: "4", memory: 8Gi}
  max: {cpu: "8", memory: 16Gi}
EOF
NODES=(dn-0 dn-1 dn-2)
for n in "${NODES[@]}"; do
  admin create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata: {name: $n, labels: {kubernetes.io/hostname: $n}}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
EOF
  admin apply -f - >/dev/null <<EOF
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: $n}
spec: {metricCollectPolicy: {aggregateDurationSeconds: 300, reportIntervalSeconds: 60}}
EOF
done
PODS=6
for ((i = 0; i < PODS; i++)); do
  admin create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: p$i, namespace: $NS, labels: {quota.scheduling.koordinator.sh/name: team-a}}
spec:
  schedulerName: koord-scheduler
  priorityClassName: koord-prod
  containers: [{name: c, image: registry.invalid/app:1, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
EOF
done
# No node has 64 cores: PodUnschedulable, so a condition patch and a FailedScheduling Event.
admin create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: $NS}
spec:
  schedulerName: koord-scheduler
  containers: [{name: c, image: registry.invalid/app:1, resources: {requests: {cpu: "64"}}}]
EOF

# A Reservation for koord-scheduler: colony run places it and writes its status.
admin create -f - >/dev/null <<EOF
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata: {name: r-web}
spec:
  template: {spec: {schedulerName: koord-scheduler, containers: [{name: c, image: registry.invalid/app:1, resources: {requests: {cpu: "1"}}}]}}
  owners: [{labelSelector: {matchLabels: {app: web}}}]
  ttl: 1h
EOF

# With leader election and the admission webhooks, so their Lease and webhook configurations are
# written under the ServiceAccount's RBAC too.
"$COLONY" run --kubeconfig "$SAKC" --log "$WORK/log" --metrics-addr 127.0.0.1:0 --leader-elect \
  --webhook-addr 127.0.0.1:0 >"$WORK/run.out" 2>"$WORK/run.err" &
RUN_PID=$!
port=""
for ((i = 0; i < 100; i++)); do
  port=$(sed -n 's|^colony run: serving .* on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$WORK/run.err")
  [[ -n "$port" ]] && break
  sleep 0.1
done
must "colony run serves its metrics (port ${port:-none})" test -n "$port"
M="http://127.0.0.1:$port"

readyz() { [[ $(curl -sS --max-time 5 "$M/readyz" 2>/dev/null) == ok ]]; }
# Fatal: an informer whose LIST is refused never syncs, and nothing after makes sense then.
wait_for "$WAIT" "/readyz 200: log replayed, every informer synced, /version answered" readyz ||
  { echo "/readyz says: $(curl -sS --max-time 5 "$M/readyz" 2>&1 | cut -c1-400)"; finish; }
metric() {   # $1 sample name with labels (exact): its value, or "" when absent
  curl -sS --max-time 5 "$M/metrics" 2>/dev/null | awk -v k="$1" '$1 == k { print $2 }'
}
# A koordlet's report, once colony run is ready (a report before the node's registration is
# kept for it: SloControllerComponent.AMetricBeforeItsNodeIsUsedWhenTheNodeRegisters).
for n in "${NODES[@]}"; do
  admin patch nodemetric "$n" --subresource=status --type=merge -p \
    "{\"status\": {\"updateTime\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"nodeMetric\": {\"nodeUsage\": {\"resources\": {\"cpu\": \"1\", \"memory\": \"4Gi\"}}}, \"podsMetric\": []}}" >/dev/null
done
check_eq "informers started: all 13 kinds (nodes, pods, priorityclasses, the ConfigMap, 9 CRDs)" \
  "$(metric colony_source_informers)" 13
check_eq "no kind skipped (every CRD installed, no LIST refused)" "$(metric colony_source_kinds_skipped)" 0

all_bound() {
  local out; out=$(admin -n "$NS" get pods -l quota.scheduling.koordinator.sh/name=team-a \
                   -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null)
  [[ $(grep -c . <<<"$out") -eq $PODS ]]
}
wait_for "$WAIT" "every pod bound ($PODS, pods/binding)" all_bound
unschedulable() {
  [[ $(admin -n "$NS" get pod too-big -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}' 2>/dev/null) == Unschedulable ]]
}
wait_for "$WAIT" "too-big has PodScheduled=False/Unschedulable (pods/status patch)" unschedulable
event() {
  [[ -n $(admin -n "$NS" get events --field-selector reason=FailedScheduling,involvedObject.name=too-big -o name 2>/dev/null) ]]
}
wait_for "$WAIT" "a FailedScheduling Event for too-big (events create)" event
batch() {
  local n v
  for n in "${NODES[@]}"; do
    v=$(admin get node "$n" -o 'jsonpath={.status.allocatable.kubernetes\.io/batch-cpu}' 2>/dev/null)
    [[ -n "$v" && "$v" != 0 ]] || return 1
  done
}
wait_for "$WAIT" "kubernetes.io/batch-cpu on every node (nodes/status patch)" batch
slo() {   # $1 the cpuSuppressThresholdPercent every node's NodeSLO must carry
  local n v
  for n in "${NODES[@]}"; do
    v=$(admin get nodeslo "$n" -o 'jsonpath={.spec.resourceUsedThresholdWithBE.enable}/{.spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent}' 2>/dev/null)
    [[ "$v" == "true/$1" ]] || return 1
  done
}
wait_for "$WAIT" "a NodeSLO per node from deploy's slo-controller-config: enable true, 65 % (nodeslos create)" slo 65
admin -n koordinator-system patch configmap slo-controller-config --type=merge \
  -p '{"data": {"resource-threshold-config": "{\"clusterStrategy\": {\"enable\": true, \"cpuSuppressThresholdPercent\": 50}}"}}' >/dev/null
wait_for "$WAIT" "the NodeSLOs follow the ConfigMap to 50 % (nodeslos get + update)" slo 50
quota() {
  [[ -n $(admin -n "$NS" get elasticquota team-a -o 'jsonpath={.metadata.annotations.quota\.scheduling\.koordinator\.sh/runtime}' 2>/dev/null) ]]
}
wait_for "$WAIT" "ElasticQuota team-a carries its runtime annotation (elasticquotas list + get + patch)" quota

reservation() {
  [[ $(admin get reservation r-web -o 'jsonpath={.status.phase}/{.status.nodeName}' 2>/dev/null) == Available/dn-* ]]
}
wait_for "$WAIT" "Reservation r-web is Available on a node (reservations get + reservations/status update)" reservation

for k in binding pod-condition event node-resources node-slo quota-status reservation-status; do
  v=$(metric "colony_api_writes_total{kind=\"$k\",result=\"written\"}")
  check "API writes of kind $k: ${v:-0} written" test "${v:-0}" -gt 0
done
failed=$(curl -sS --max-time 5 "$M/metrics" | awk '$1 ~ /^colony_api_writes_total\{.*result="failed"/ { s += $2 } END { print s + 0 }')
check_eq "no API write failed (colony_api_writes_total{result=\"failed\"})" "$failed" 0

kill -TERM "$RUN_PID"; wait "$RUN_PID"; rc=$?; RUN_PID=""
check_eq "colony run exits 0 on SIGTERM" "$rc" 0
summary=$(tail -n 1 "$WORK/run.out")
echo "summary: $summary"
jq_() { "${PYTHON:-python3}" -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$summary" 2>/dev/null; }
check_eq "summary: api_write_failures" "$(jq_ "$summary" 'd["api_write_failures"]')" 0
check_eq "summary: led (the Lease taken under the ServiceAccount)" "$(jq_ "$summary" 'd["led"]')" True
check "the webhook configurations were registered under the ServiceAccount" \
  admin get mutatingwebhookconfiguration colony-mutating-webhook-configuration -o name
check "the Lease names this run as its holder or was released" \
  admin -n colony-system get lease colony-manager -o name
check "summary: api_writes > 0 ($(jq_ "$summary" 'd["api_writes"]'))" test "$(jq_ "$summary" 'd["api_writes"]' || echo 0)" -gt 0
stats=$("$COLONY" log stats --log "$WORK/log" 2>&1); rc=$?
check "colony log stats reads the whole log (rc $rc)" test "$rc" -eq 0
check "the log holds no WriteFailed" bash -c '! grep -q WriteFailed <<<"$1"' _ "$stats"
# A refused write is a WriteFailed record naming the object, the HTTP status and the reason.
"$COLONY" log dump --log "$WORK/log" 2>/dev/null | grep WriteFailed | head -n 3 | cut -c1-400
check "colony run's stderr names no 403/Forbidden" bash -c '! grep -Eiq "forbidden|HTTP 403" "$1"' _ "$WORK/run.err"
grep -Ei 'forbidden|HTTP 403' "$WORK/run.err" | head -n 5

# ---- 3. what the ServiceAccount may and may not do
# allow|deny, then `kubectl auth can-i` arguments. Allowed: each a request colony run makes
# (deploy/10-rbac.yaml says which code path). Denied: what a scheduler/manager must never need.
CAN_I=(
  "allow list nodes" "allow watch nodes" "allow get nodes"
  "allow list pods -A" "allow watch pods -A" "allow get pods -n $NS"
  "allow create pods --subresource=binding -n $NS"
  "allow patch pods --subresource=status -n $NS"
  "allow create events -n $NS"
  "allow patch nodes --subresource=status"
  "allow list priorityclasses.scheduling.k8s.io" "allow watch priorityclasses.scheduling.k8s.io"
  "allow list configmaps/slo-controller-config -n koordinator-system"
  "allow watch configmaps/slo-controller-config -n koordinator-system"
  "allow watch clustercolocationprofiles.config.koordinator.sh"
  "allow list elasticquotas.scheduling.sigs.k8s.io -A"
  "allow get elasticquotas.scheduling.sigs.k8s.io -n $NS"
  "allow patch elasticquotas.scheduling.sigs.k8s.io -n $NS"
  "allow create elasticquotas.scheduling.sigs.k8s.io -n $NS"
  "allow watch nodemetrics.slo.koordinator.sh"
  "allow get nodeslos.slo.koordinator.sh" "allow create nodeslos.slo.koordinator.sh"
  "allow update nodeslos.slo.koordinator.sh"
  "allow watch elasticquotaprofiles.quota.koordinator.sh -A"
  "allow watch reservations.scheduling.koordinator.sh"
  "allow get reservations.scheduling.koordinator.sh"
  "allow update reservations.scheduling.koordinator.sh --subresource=status"
  "allow create reservations.scheduling.koordinator.sh"
  "allow delete reservations.scheduling.koordinator.sh"
  "allow watch podmigrationjobs.scheduling.koordinator.sh"
  "allow watch devices.scheduling.koordinator.sh"
  "allow watch noderesourcetopologies.topology.node.k8s.io"
  "allow watch podgroups.scheduling.sigs.k8s.io -A"
  "allow create mutatingwebhookconfigurations.admissionregistration.k8s.io"
  "allow create validatingwebhookconfigurations.admissionregistration.k8s.io"
  "allow get mutatingwebhookconfigurations.admissionregistration.k8s.io/colony-mutating-webhook-configuration"
  "allow update mutatingwebhookconfigurations.admissionregistration.k8s.io/colony-mutating-webhook-configuration"
  "deny patch mutatingwebhookconfigurations.admissionregistration.k8s.io/colony-mutating-webhook-configuration"
  "allow get validatingwebhookconfigurations.admissionregistration.k8s.io/colony-validating-webhook-configuration"
  "allow update validatingwebhookconfigurations.admissionregistration.k8s.io/colony-validating-webhook-configuration"
  "deny patch validatingwebhookconfigurations.admissionregistration.k8s.io/colony-validating-webhook-configuration"
  "allow get /version"
  "allow create leases.coordination.k8s.io -n colony-system"
  "allow get leases.coordination.k8s.io/colony-manager -n colony-system"
  "allow update leases.coordination.k8s.io/colony-manager -n colony-system"
  # Pods are the workload's: never created, changed or deleted.
  "deny create pods -n $NS" "deny delete pods -n $NS" "deny update pods -n $NS" "deny patch pods -n $NS"
  "deny deletecollection pods -n $NS" "deny update pods --subresource=status -n $NS"
  # Only the descheduler emits PodEvicted in colony run, and deploy/ does not enable it (section 4:
  # deploy/descheduler grants the eviction and the PodMigrationJob writes).
  "deny create pods --subresource=eviction -n $NS"
  "deny create pods --subresource=exec -n $NS"
  # Nodes: status only, never the spec (taints, unschedulable) or the object.
  "deny create nodes" "deny delete nodes" "deny update nodes" "deny patch nodes"
  "deny update nodes --subresource=status"
  # Secrets, other ConfigMaps, the ConfigMap itself by GET or write.
  "deny get secrets -A" "deny list secrets -A" "deny get secrets -n colony-system"
  "deny list configmaps -n koordinator-system" "deny get configmaps/slo-controller-config -n koordinator-system"
  "deny update configmaps/slo-controller-config -n koordinator-system"
  "deny list configmaps -n kube-system" "deny get configmaps/other -n koordinator-system"
  # No way to more privilege.
  "deny create clusterrolebindings" "deny create rolebindings -n colony-system"
  "deny escalate clusterroles" "deny bind clusterroles" "deny update clusterroles/colony-manager"
  "deny create serviceaccounts --subresource=token -n colony-system"
  "deny impersonate users" "deny impersonate serviceaccounts -n colony-system"
  "deny create customresourcedefinitions.apiextensions.k8s.io"
  # Webhook configurations other than Colony's two.
  "deny get mutatingwebhookconfigurations.admissionregistration.k8s.io/other-webhook"
  "deny patch mutatingwebhookconfigurations.admissionregistration.k8s.io/other-webhook"
  "deny update validatingwebhookconfigurations.admissionregistration.k8s.io/other-webhook"
  "deny delete mutatingwebhookconfigurations.admissionregistration.k8s.io/colony-mutating-webhook-configuration"
  "deny list mutatingwebhookconfigurations.admissionregistration.k8s.io"
  # Namespaces, quotas, NodeSLOs, reports: only what colony run writes, never deleted.
  "deny delete namespaces/$NS" "deny create namespaces"
  "deny delete elasticquotas.scheduling.sigs.k8s.io -n $NS"
  "deny update elasticquotas.scheduling.sigs.k8s.io -n $NS"
  "deny delete nodeslos.slo.koordinator.sh" "deny create nodemetrics.slo.koordinator.sh"
  "deny update reservations.scheduling.koordinator.sh" "deny patch reservations.scheduling.koordinator.sh"
  "deny patch reservations.scheduling.koordinator.sh --subresource=status"
  "deny deletecollection reservations.scheduling.koordinator.sh"
  "deny create podmigrationjobs.scheduling.koordinator.sh"
  "deny update podmigrationjobs.scheduling.koordinator.sh --subresource=status"
  "deny create deployments.apps -n colony-system" "deny update leases.coordination.k8s.io/other -n colony-system"
  "deny delete leases.coordination.k8s.io/colony-manager -n colony-system"
  "deny update leases.coordination.k8s.io/kube-scheduler -n kube-system"
  "deny list leases.coordination.k8s.io -n colony-system"
  "deny * *"
)
# The koordlet's ServiceAccount (deploy/koordlet/rbac.yaml): its three informers, its
# NodeMetric status, its NodeResourceTopology and the Eviction API, nothing else.
KSA=system:serviceaccount:colony-system:colony-koordlet
CAN_I_KOORDLET=(
  "allow list nodes" "allow watch nodes"
  "allow list pods -A" "allow watch pods -A"
  "allow create pods --subresource=eviction -n $NS"
  "allow get nodemetrics.slo.koordinator.sh" "allow create nodemetrics.slo.koordinator.sh"
  "allow update nodemetrics.slo.koordinator.sh --subresource=status"
  "allow list nodeslos.slo.koordinator.sh" "allow watch nodeslos.slo.koordinator.sh"
  "allow get noderesourcetopologies.topology.node.k8s.io"
  "allow create noderesourcetopologies.topology.node.k8s.io"
  "allow patch noderesourcetopologies.topology.node.k8s.io"
  # Reads and writes it never makes.
  "deny delete noderesourcetopologies.topology.node.k8s.io"
  "deny get nodes" "deny patch nodes" "deny patch nodes --subresource=status"
  "deny get pods -n $NS" "deny delete pods -n $NS" "deny patch pods -n $NS"
  "deny update pods --subresource=status -n $NS" "deny create pods --subresource=binding -n $NS"
  "deny update nodemetrics.slo.koordinator.sh" "deny delete nodemetrics.slo.koordinator.sh"
  "deny list nodemetrics.slo.koordinator.sh"
  "deny create nodeslos.slo.koordinator.sh" "deny update nodeslos.slo.koordinator.sh"
  "deny get secrets -A" "deny list configmaps -A" "deny create events -n $NS"
  "deny create clusterrolebindings" "deny impersonate users"
  "deny * *"
)
set -f   # "deny * *": no globbing of the rows' words
for row in "${CAN_I_KOORDLET[@]}"; do
  read -r want rest <<<"$row"
  # shellcheck disable=SC2086  # the row's words are kubectl's arguments
  got=$(admin auth can-i $rest --as="$KSA" 2>/dev/null)
  case $want in allow) expect=yes ;; *) expect=no ;; esac
  check_eq "koordlet can-i $rest: $want" "$got" "$expect"
done
for row in "${CAN_I[@]}"; do
  read -r want rest <<<"$row"
  # shellcheck disable=SC2086  # the row's words are kubectl's arguments
  got=$(admin auth can-i $rest --as="$SA" 2>/dev/null)
  case $want in allow) expect=yes ;; *) expect=no ;; esac
  check_eq "can-i $rest: $want" "$got" "$expect"
done
set +f

# ---- 4. deploy/descheduler: colony run hosting koord-descheduler, under the same ServiceAccount
# with the overlay's ClusterRole colony-manager-descheduler added.
if [[ -d "$DEPLOY/descheduler" ]]; then
  out=$(admin apply --dry-run=server -k "$DEPLOY/descheduler" 2>&1); rc=$?
  check "server dry run of deploy/descheduler (rc $rc)" test "$rc" -eq 0
  [[ $rc -eq 0 ]] || echo "$out"
  rendered=$(admin kustomize "$DEPLOY/descheduler" 2>&1)
  for f in $(sed -n 's/^ *- \(--[a-z-]*\).*/\1/p' <<<"$rendered" | sort -u); do
    check "the descheduler overlay's $f is a colony run flag" grep -q -- "$f" <<<"$help"
  done
  check "the overlay runs colony run with --descheduler-config" \
    grep -q -- '--descheduler-config=/etc/colony/descheduler/descheduler.yaml' <<<"$rendered"
  # Its configuration is one colony run accepts: a run with it against no server stops at the
  # kubeconfig, past the config (a bad one is exit 3 naming the file).
  python3 - "$rendered" >"$WORK/overlay-descheduler.yaml" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(sys.argv[1]):
    if d and d.get("kind") == "ConfigMap" and d["metadata"]["name"] == "colony-descheduler-config":
        print(d["data"]["descheduler.yaml"], end="")
PY
  "$COLONY" run --kubeconfig "$WORK/none.kubeconfig" --log "$WORK/dlog" \
    --descheduler-config "$WORK/overlay-descheduler.yaml" >/dev/null 2>"$WORK/dcfg.err"; rc=$?
  check "the overlay's DeschedulerConfiguration is accepted (exit $rc: $(head -c 200 "$WORK/dcfg.err"))" \
    bash -c '[[ $1 -ne 3 ]] || ! grep -q overlay-descheduler "$2"' _ "$rc" "$WORK/dcfg.err"
  out=$(admin apply -f "$DEPLOY/descheduler/rbac.yaml" 2>&1); rc=$?
  must "apply deploy/descheduler/rbac.yaml (rc $rc)" test "$rc" -eq 0
  CAN_I_DESCHEDULER=(
    "allow create pods --subresource=eviction -n $NS"
    "allow get podmigrationjobs.scheduling.koordinator.sh"
    "allow create podmigrationjobs.scheduling.koordinator.sh"
    "allow update podmigrationjobs.scheduling.koordinator.sh --subresource=status"
    # Never the spec, never a deletion; status by PUT only (no patch in the code).
    "deny update podmigrationjobs.scheduling.koordinator.sh"
    "deny patch podmigrationjobs.scheduling.koordinator.sh"
    "deny delete podmigrationjobs.scheduling.koordinator.sh"
    "deny patch podmigrationjobs.scheduling.koordinator.sh --subresource=status"
    "deny delete pods -n $NS" "deny deletecollection podmigrationjobs.scheduling.koordinator.sh"
    "deny * *"
  )
  set -f
  for row in "${CAN_I_DESCHEDULER[@]}"; do
    read -r want rest <<<"$row"
    # shellcheck disable=SC2086  # the row's words are kubectl's arguments
    got=$(admin auth can-i $rest --as="$SA" 2>/dev/null)
    case $want in allow) expect=yes ;; *) expect=no ;; esac
    check_eq "descheduler can-i $rest: $want" "$got" "$expect"
  done
  set +f

  # The descheduler's whole job under the token: a user's PodMigrationJob carried out (GET, status
  # PUT, eviction), and LowNodeLoad's own job for a pod of a node made hot (create). A round a
  # second, one abnormal round enough, bare pods evictable: the shipped config waits minutes.
  sed -e 's/deschedulingInterval: 10s/deschedulingInterval: 1s/' \
      -e 's/defaultJobMode: EvictDirectly/defaultJobMode: EvictDirectly\n      evictAllBarePods: true/' \
      -e 's/^      kind: LowNodeLoadArgs$/      kind: LowNodeLoadArgs\n      anomalyCondition: {consecutiveAbnormalities: 1}/' \
      "$WORK/overlay-descheduler.yaml" >"$WORK/fast-descheduler.yaml"
  # With the webhooks again: the configurations the first run registered point at its server.
  "$COLONY" run --kubeconfig "$SAKC" --log "$WORK/log" --metrics-addr 127.0.0.1:0 \
    --webhook-addr 127.0.0.1:0 --descheduler-config "$WORK/fast-descheduler.yaml" \
    >"$WORK/run2.out" 2>"$WORK/run2.err" &
  RUN_PID=$! RUN_ERR=$WORK/run2.err
  port=""
  for ((i = 0; i < 100; i++)); do
    port=$(sed -n 's|^colony run: serving .* on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$WORK/run2.err")
    [[ -n "$port" ]] && break
    sleep 0.1
  done
  M="http://127.0.0.1:$port"
  wait_for "$WAIT" "colony run with the descheduler is ready" readyz
  admin create -f - >/dev/null <<EOF2
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata: {name: rbac-user-job}
spec: {podRef: {namespace: $NS, name: p1}, mode: EvictDirectly}
EOF2
  job_phase() { admin get podmigrationjob "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
  user_job_done() { [[ $(job_phase rbac-user-job) == Succeeded ]]; }
  wait_for "$WAIT" "a user's PodMigrationJob ends Succeeded (podmigrationjobs get, /status update, pods/eviction)" user_job_done
  # The node of p0 hot, its pods using 90 % of its cpu (LowNodeLoad sums the pods' usage), the
  # others cold: LowNodeLoad creates a job for a pod of it.
  hot=$(admin -n "$NS" get pod p0 -o 'jsonpath={.spec.nodeName}')
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  for n in "${NODES[@]}"; do
    pm="[]" cpu=500m
    if [[ $n == "$hot" ]]; then
      cpu=7200m
      pm=$(admin -n "$NS" get pods --field-selector "spec.nodeName=$n" -o json | python3 -c '
import json, sys
pods = [p for p in json.load(sys.stdin)["items"] if "deletionTimestamp" not in p["metadata"]]
print(json.dumps([{"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                   "podUsage": {"resources": {"cpu": "%dm" % (7200 // len(pods)), "memory": "256Mi"}}}
                  for p in pods]))')
    fi
    admin patch nodemetric "$n" --subresource=status --type=merge -p \
      "{\"status\": {\"updateTime\": \"$now\", \"nodeMetric\": {\"nodeUsage\": {\"resources\": {\"cpu\": \"$cpu\", \"memory\": \"4Gi\"}}}, \"podsMetric\": $pm}}" >/dev/null
  done
  descheduler_job_done() {
    admin get podmigrationjobs -o json 2>/dev/null | python3 -c '
import json, sys
jobs = [j for j in json.load(sys.stdin)["items"]
        if j["metadata"].get("annotations", {}).get("koordinator.sh/job-created-by") == "koord-descheduler"]
sys.exit(0 if any(j.get("status", {}).get("phase") == "Succeeded" for j in jobs) else 1)'
  }
  wait_for "$WAIT" "LowNodeLoad's PodMigrationJob for a pod of $hot exists and ends Succeeded (podmigrationjobs create)" descheduler_job_done
  for k in migration-job migration-job-status eviction; do
    v=$(metric "colony_api_writes_total{kind=\"$k\",result=\"written\"}")
    check "API writes of kind $k: ${v:-0} written" test "${v:-0}" -gt 0
  done
  failed=$(curl -sS --max-time 5 "$M/metrics" | awk '$1 ~ /^colony_api_writes_total\{.*result="failed"/ { s += $2 } END { print s + 0 }')
  check_eq "no API write failed with the descheduler" "$failed" 0
  kill -TERM "$RUN_PID"; wait "$RUN_PID"; rc=$?; RUN_PID=""
  check_eq "colony run with the descheduler exits 0 on SIGTERM" "$rc" 0
  check "its stderr names no 403/Forbidden" bash -c '! grep -Eiq "forbidden|HTTP 403" "$1"' _ "$WORK/run2.err"
  grep -Ei 'forbidden|HTTP 403' "$WORK/run2.err" | head -n 5
  stats=$("$COLONY" log stats --log "$WORK/log" 2>&1)
  check "the log still holds no WriteFailed" bash -c '! grep -q WriteFailed <<<"$1"' _ "$stats"
fi
finish
