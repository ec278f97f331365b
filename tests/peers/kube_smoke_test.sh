#!/usr/bin/env bash
# tests/peers/kube_smoke_test.sh — checks tools/peers/kube.sh against a real kube-apiserver + etcd:
# start/status/env/idempotent start, token authentication (admin 200, viewer 403, bad token 401),
# Koordinator's CRDs (skipped only when the shared CRD folder is absent) and PriorityClasses, a
# Node and a Pod made with kubectl, the pod bound through pods/NAME/binding, the apiserver killed
# and restarted (same port and CA, the pod still there), etcd compacted (a WATCH from the older
# resourceVersion gets 410 Gone), stop leaves no process and no data; then a second instance
# with the watch cache off, where compaction alone makes a WATCH from an older resourceVersion
# 410 Gone.
# Needs: the binaries of `tools/peers/kube.sh install` (built on first use, ~9 min), curl,
# openssl, python3. Label kube in ctest (tests/peers/CMakeLists.txt).
# Last line is exactly "N passed, M failed"; exit status 0 iff M == 0.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K="$ROOT/tools/peers/kube.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kube-smoke-test.XXXXXX")
D="$WORK/kube"
D2="$WORK/kube-nocache"
NS=colony-smoke
CRDS=${COLONY_KOORDINATOR_CRDS:-$ROOT/../shared/koordinator-crds}
export PYENV_VERSION=${PYENV_VERSION:-system}
PASS=0 FAIL=0
T0=$(date +%s.%N)

ok() { PASS=$((PASS + 1)); echo "PASS: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# check_eq NAME GOT WANT: says what it got when it fails
check_eq() { if [[ "$2" == "$3" ]]; then ok "$1"; else bad "$1 (got '$2', want '$3')"; fi; }

cleanup() {
  local d
  for d in "$D" "$D2"; do
    [[ -d "$d" ]] && KUBE_STOP_TIMEOUT=5 bash "$K" stop --dir "$d" >/dev/null 2>&1
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
  echo "wall $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  echo "$PASS passed, $FAIL failed"; [[ $FAIL -eq 0 ]]; exit $?
}
# a fatal check: later steps make no sense without it
must() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; finish; fi; }

live() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [[ ${st%% *} != Z ]]; }
dead() { ! live "$1"; }
contains() { [[ "$1" == *"$2"* ]]; }
matches() { [[ "$1" =~ $2 ]]; }

# HTTP status of a GET with the given token (empty: anonymous)
http_code() {   # $1 token, $2 path
  local auth=(); [[ -n "$1" ]] && auth=(-H "Authorization: Bearer $1")
  curl -sS -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$KUBE_CA" "${auth[@]}" "$KUBE_API$2" 2>/dev/null
}
kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG" --cache-dir "$WORK/kubectl-cache" "$@"; }
api() {   # $1 method, $2 path, rest: curl args; body then a line with the HTTP code
  local m=$1 p=$2; shift 2
  curl -sS --max-time 30 --cacert "$KUBE_CA" -H "Authorization: Bearer $KUBE_TOKEN" -X "$m" \
    -w '\n%{http_code}' "$@" "$KUBE_API$p"
}
json() { "${PYTHON:-python3}" -c "import json,sys; d=json.loads(sys.stdin.read()); print($1)"; }

# check_gone NAME PATH RV: a WATCH of PATH from RV gets either a 410 response or a 200 stream
# whose first event is an ERROR with a Status of code 410.
check_gone() {
  local name=$1 path=$2 rv=$3 out code body gone
  out=$(curl -sS -N --max-time 15 --cacert "$KUBE_CA" -H "Authorization: Bearer $KUBE_TOKEN" \
          -w '\n%{http_code}' "$KUBE_API$path?watch=true&resourceVersion=$rv" 2>&1)
  code=${out##*$'\n'}; body=${out%$'\n'*}; body=${body%$'\n'}
  gone=$("${PYTHON:-python3}" -c '
import json, sys
code, body = sys.argv[1], sys.argv[2].strip()
if code == "410": print("410"); sys.exit()
first = json.loads(body.splitlines()[0]) if body else {}
obj = first.get("object") or {}
print(first.get("type"), obj.get("code"))' "$code" "$body" 2>&1)
  if [[ "$gone" == 410 || "$gone" == "ERROR 410" ]]; then
    ok "$name: $gone (${body:0:200})"
  else
    bad "$name: want 410 or an ERROR event with code 410; got HTTP $code: ${body:0:300}"
  fi
}

# ---- install (a no-op when the cache is warm) and start
must "install (binaries in the cache, pinned versions)" bash -c "bash '$K' install >/dev/null"
t=$(date +%s.%N)
KC=$(bash "$K" start --dir "$D"); rc=$?
start_s=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
must "start exits 0 (${start_s} s)" test "$rc" -eq 0
must "start prints DIR/kubeconfig (got '$KC')" test "$KC" = "$D/kubeconfig" -a -f "$KC"
ENV=$(bash "$K" env --dir "$D") || { bad "env"; finish; }
for v in KUBECONFIG KUBE_API KUBE_CA KUBE_TOKEN KUBE_VIEWER_TOKEN ETCD_ENDPOINT KUBE_DIR KUBECTL \
         KUBE_APISERVER_PID ETCD_PID; do
  line=$(grep "^$v=" <<<"$ENV") || { bad "env prints $v="; continue; }
  printf -v "$v" '%s' "${line#*=}"
done
ok "env lines read"
check "KUBE_API is https://127.0.0.1:PORT ($KUBE_API)" matches "$KUBE_API" '^https://127\.0\.0\.1:[0-9]+$'
check "ETCD_ENDPOINT is http://127.0.0.1:PORT ($ETCD_ENDPOINT)" matches "$ETCD_ENDPOINT" '^http://127\.0\.0\.1:[0-9]+$'
check_eq "status says running" "$(bash "$K" status --dir "$D")" "running $KUBE_API"
check_eq "second start on the same dir is idempotent" "$(bash "$K" start --dir "$D" 2>/dev/null)" "$KC"
check "ca.crt is one self-signed CA certificate" \
  bash -c "[[ \$(grep -c 'BEGIN CERTIFICATE' '$KUBE_CA') == 1 ]] && openssl verify -CAfile '$KUBE_CA' '$KUBE_CA' >/dev/null"
check "the serving certificate verifies against ca.crt" \
  bash -c "openssl verify -CAfile '$KUBE_CA' <(awk '{print} /END CERTIFICATE/ {exit}' '$D/certs/apiserver.crt') >/dev/null"

# ---- authentication and RBAC
check_eq "readyz with the admin token" "$(http_code "$KUBE_TOKEN" /readyz)" 200
check_eq "viewer token listing nodes is forbidden" "$(http_code "$KUBE_VIEWER_TOKEN" /api/v1/nodes)" 403
check_eq "a bad token is unauthorized" "$(http_code not-a-token /api/v1/nodes)" 401
check_eq "admin token lists nodes" "$(http_code "$KUBE_TOKEN" /api/v1/nodes)" 200
out=$(kc version -o json 2>&1); ver=$(json 'd["serverVersion"]["gitVersion"]' <<<"$out" 2>/dev/null)
check_eq "kubectl reaches the server, which reports v1.34.3" "$ver" v1.34.3

# ---- Koordinator CRDs and PriorityClasses
if [[ -d "$CRDS" ]]; then
  out=$(bash "$K" apply-crds --dir "$D" 2>"$WORK/crds.err"); rc=$?
  check "apply-crds exits 0 ($(tail -n 1 "$WORK/crds.err"))" test "$rc" -eq 0
  [[ $rc -eq 0 ]] || cat "$WORK/crds.err"
  n=$(grep -c '\.' <<<"$out")
  want=$(find "$CRDS" -maxdepth 1 -name '*.yaml' | wc -l)
  check_eq "apply-crds applied every CRD file" "$n" "$want"
  out=$(kc get crd nodemetrics.slo.koordinator.sh -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>&1)
  check_eq "NodeMetric CRD is Established" "$out" True
  out=$(bash "$K" apply-crds --dir "$D" 2>&1); rc=$?
  check "apply-crds again (server-side apply is idempotent)" test "$rc" -eq 0
else
  echo "SKIP: Koordinator CRDs: no folder $CRDS (set COLONY_KOORDINATOR_CRDS); CRD checks skipped"
fi
out=$(bash "$K" priority-classes --dir "$D" 2>&1); rc=$?
check "priority-classes exits 0" test "$rc" -eq 0
out=$(bash "$K" priority-classes --dir "$D" 2>&1); rc=$?
check "priority-classes again (409 is fine)" test "$rc" -eq 0
for pc in koord-prod=9000 koord-mid=7000 koord-batch=5000 koord-free=3000; do
  check_eq "PriorityClass ${pc%=*}" "$(kc get priorityclass "${pc%=*}" -o 'jsonpath={.value}' 2>&1)" "${pc#*=}"
done

# ---- a Node and a Pod with kubectl, bound through pods/NAME/binding
out=$(kc create namespace "$NS" 2>&1); check "kubectl create namespace ($out)" test $? -eq 0
out=$(kc apply -f - 2>&1 <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: smoke-node-1
  labels: {kubernetes.io/hostname: smoke-node-1}
status:
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
EOF
); check "kubectl apply Node ($out)" test $? -eq 0
out=$(kc -n "$NS" apply -f - 2>&1 <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: smoke-pod-1
  labels: {koordinator.sh/qosClass: BE}
spec:
  schedulerName: koord-scheduler
  priorityClassName: koord-batch
  containers:
  - name: c
    image: registry.invalid/pause:3.10
    resources:
      requests: {cpu: 500m, memory: 256Mi}
EOF
); check "kubectl apply Pod ($out)" test $? -eq 0
check_eq "Priority admission sets the pod's priority from koord-batch" \
  "$(kc -n "$NS" get pod smoke-pod-1 -o 'jsonpath={.spec.priority}' 2>&1)" 5000
out=$(api GET "/api/v1/namespaces/$NS/pods")
RV_OLD=$(json 'd["metadata"]["resourceVersion"]' <<<"${out%$'\n'*}" 2>/dev/null)
check "pod list has a resourceVersion ($RV_OLD)" matches "$RV_OLD" '^[0-9]+$'
out=$(api POST "/api/v1/namespaces/$NS/pods/smoke-pod-1/binding" -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"smoke-pod-1"},"target":{"apiVersion":"v1","kind":"Node","name":"smoke-node-1"}}')
check_eq "POST pods/smoke-pod-1/binding" "${out##*$'\n'}" 201
check_eq "kubectl sees spec.nodeName" "$(kc -n "$NS" get pod smoke-pod-1 -o 'jsonpath={.spec.nodeName}' 2>&1)" smoke-node-1
out=$(api POST "/api/v1/namespaces/$NS/pods/smoke-pod-1/binding" -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"smoke-pod-1"},"target":{"apiVersion":"v1","kind":"Node","name":"smoke-node-1"}}')
check_eq "a second binding is a conflict" "${out##*$'\n'}" 409

# ---- kill and restart the apiserver: same port, same etcd, same CA, data kept
ca_before=$(sha256sum <"$KUBE_CA")
out=$(bash "$K" kill-apiserver --dir "$D" 2>&1); check "kill-apiserver exits 0" test $? -eq 0
check "the apiserver process is gone" dead "$KUBE_APISERVER_PID"
check "etcd still runs" live "$ETCD_PID"
check_eq "readyz fails while it is down" "$(http_code "$KUBE_TOKEN" /readyz)" 000
out=$(bash "$K" status --dir "$D" 2>/dev/null); rc=$?
check_eq "status says not running (rc $rc)" "$out/$rc" "not running/3"
t=$(date +%s.%N)
out=$(bash "$K" restart-apiserver --dir "$D"); rc=$?
restart_s=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
must "restart-apiserver exits 0 and prints the kubeconfig (${restart_s} s)" test "$rc" -eq 0 -a "$out" = "$KC"
ENV2=$(bash "$K" env --dir "$D")
check_eq "same API address after the restart" "$(grep '^KUBE_API=' <<<"$ENV2")" "KUBE_API=$KUBE_API"
check_eq "same etcd after the restart" "$(grep '^ETCD_PID=' <<<"$ENV2")" "ETCD_PID=$ETCD_PID"
check_eq "same CA after the restart" "$(sha256sum <"$KUBE_CA")" "$ca_before"
check_eq "readyz again" "$(http_code "$KUBE_TOKEN" /readyz)" 200
check_eq "the bound pod survived the restart" \
  "$(kc -n "$NS" get pod smoke-pod-1 -o 'jsonpath={.spec.nodeName}' 2>&1)" smoke-node-1
check_eq "the Node survived the restart" "$(kc get node smoke-node-1 -o 'jsonpath={.metadata.name}' 2>&1)" smoke-node-1

# ---- compaction: a WATCH from before it gets 410 Gone
REV=$(bash "$K" compact --dir "$D"); rc=$?
check "compact exits 0 (rc $rc) and prints a revision ($REV)" matches "$rc:$REV" '^0:[0-9]+$'
check "compaction revision $REV is past the old resourceVersion $RV_OLD" test "${REV:-0}" -gt "${RV_OLD:-0}"
out=$(curl -sS --max-time 10 -X POST "$ETCD_ENDPOINT/v3/kv/range" -d "{\"key\":\"Y29sb255\",\"revision\":\"$RV_OLD\"}" 2>&1)
check "etcd refuses a read at revision $RV_OLD: compacted (${out:0:120})" \
  contains "$out" 'required revision has been compacted'
# With the watch cache on (the default), this 410 comes from the cache: after the restart its
# window starts at the revision it listed then, so any older resourceVersion is expired whether
# or not etcd was compacted. The second instance below checks compaction on its own.
check_gone "WATCH of pods from resourceVersion $RV_OLD after restart + compaction" \
  "/api/v1/namespaces/$NS/pods" "$RV_OLD"
out=$(api GET "/api/v1/namespaces/$NS/pods")
RV_NEW=$(json 'd["metadata"]["resourceVersion"]' <<<"${out%$'\n'*}" 2>/dev/null)
out=$(curl -sS -N --max-time 3 --cacert "$KUBE_CA" -H "Authorization: Bearer $KUBE_TOKEN" \
        "$KUBE_API/api/v1/namespaces/$NS/pods?watch=true&resourceVersion=$RV_NEW" 2>&1)
if contains "$out" 'Operation timed out' && ! contains "$out" '"ERROR"'; then
  ok "a WATCH from the current resourceVersion $RV_NEW stays open with no error"
else
  bad "a WATCH from the current resourceVersion $RV_NEW stays open with no error (got: ${out:0:300})"
fi

# ---- stop: nothing left running, data deleted
out=$(bash "$K" stop --dir "$D" 2>&1); check "stop exits 0" test $? -eq 0
check "the apiserver process $KUBE_APISERVER_PID is gone" dead "$KUBE_APISERVER_PID"
check "the etcd process $ETCD_PID is gone" dead "$ETCD_PID"
left=$(pgrep -f -- "[-]-data-dir=$D/|[-]-cert-dir=$D/" || true)
check_eq "no process with this dir on its command line" "$left" ""
check "etcd data, certs and kubeconfig deleted" test ! -e "$D/etcd-data" -a ! -e "$D/certs" -a ! -e "$D/kubeconfig"
out=$(bash "$K" status --dir "$D" 2>/dev/null); rc=$?
check_eq "status after stop" "$out/$rc" "not running/3"

# ---- compaction seen by watches: a second instance with the watch cache off
# With the cache on, a resourceVersion still inside the cache's window is served from memory
# even after etcd compacted it; with --watch-cache=false every WATCH goes to etcd.
KC2=$(KUBE_APISERVER_ARGS=--watch-cache=false bash "$K" start --dir "$D2"); rc=$?
must "start with KUBE_APISERVER_ARGS=--watch-cache=false" test "$rc" -eq 0 -a "$KC2" = "$D2/kubeconfig"
ENV=$(bash "$K" env --dir "$D2")
for v in KUBE_API KUBE_CA KUBE_APISERVER_PID ETCD_PID; do
  line=$(grep "^$v=" <<<"$ENV") && printf -v "$v" '%s' "${line#*=}"
done
check "the apiserver runs with --watch-cache=false" \
  contains "$(tr '\0' ' ' <"/proc/$KUBE_APISERVER_PID/cmdline" 2>/dev/null)" " --watch-cache=false "
rvs=()
for i in 1 2 3; do
  out=$(api POST /api/v1/namespaces/default/configmaps -H 'Content-Type: application/json' \
          -d "{\"metadata\":{\"name\":\"smoke-cm-$i\"}}")
  rvs+=("$(json 'd["metadata"]["resourceVersion"]' <<<"${out%$'\n'*}" 2>/dev/null)")
done
check "three ConfigMaps created (resourceVersions ${rvs[*]})" matches "${rvs[*]}" '^[0-9]+ [0-9]+ [0-9]+$'
REV=$(bash "$K" compact --dir "$D2"); rc=$?
check "compact exits 0 (rc $rc, revision $REV)" matches "$rc:$REV" '^0:[0-9]+$'
check_gone "WATCH of configmaps from resourceVersion ${rvs[0]} after compaction at $REV" \
  /api/v1/namespaces/default/configmaps "${rvs[0]}"
out=$(bash "$K" stop --dir "$D2" 2>&1); check "stop of the second instance exits 0" test $? -eq 0
check "its apiserver process $KUBE_APISERVER_PID is gone" dead "$KUBE_APISERVER_PID"
check "its etcd process $ETCD_PID is gone" dead "$ETCD_PID"
finish
