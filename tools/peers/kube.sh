#!/usr/bin/env bash
# tools/peers/kube.sh — a real kube-apiserver 1.34.3 + etcd 3.6.4 (+ kubectl) on 127.0.0.1 for tests.
#
#   kube.sh install                         build etcd, kube-apiserver and kubectl from the Go module
#                                           proxy into the cache (idempotent; prints the bin folder)
#   kube.sh start  [--dir DIR]              start etcd and the apiserver on 127.0.0.1:<free ports>,
#                                           wait for /readyz; prints DIR/kubeconfig on stdout
#   kube.sh stop   [--dir DIR]              TERM (then KILL) the apiserver, then etcd; delete the data
#   kube.sh status [--dir DIR]              "running https://127.0.0.1:PORT" (rc 0) or "not running" (rc 3)
#   kube.sh env    [--dir DIR]              KUBECONFIG=, KUBE_API=, KUBE_CA=, KUBE_TOKEN=,
#                                           KUBE_VIEWER_TOKEN=, ETCD_ENDPOINT=, KUBE_DIR=, KUBECTL= lines
#   kube.sh kill-apiserver [--dir DIR] [--signal KILL|TERM]
#                                           stop the apiserver only; etcd, certs and port stay
#                                           (fault tests; default signal KILL = a crash)
#   kube.sh restart-apiserver [--dir DIR]   start a killed apiserver again: same port, same etcd,
#                                           same certs; prints DIR/kubeconfig
#   kube.sh compact [--dir DIR]             compact etcd at its current revision (physical);
#                                           prints that revision
#   kube.sh apply-crds [--dir DIR] [FILE_OR_DIR...]
#                                           server-side apply CRD YAML files (default: Koordinator's,
#                                           $COLONY_KOORDINATOR_CRDS or ../shared/koordinator-crds
#                                           beside the checkout), then wait until each is Established
#   kube.sh priority-classes [--dir DIR]    create Koordinator's PriorityClasses (409 = already there)
#
# One DIR = one instance (etcd + apiserver); instances in different DIRs run side by side.
# Environment (all optional):
#   COLONY_PEERS_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/colony/peers); binaries go
#                        to kube-<version>/bin and etcd-<version>/bin, the scratch Go modules to
#                        kube-<version>/src and etcd-<version>/src, Go's caches to gomod/ and gobuild/
#   KUBE_READY_TIMEOUT   seconds to wait for etcd health + apiserver /readyz (default 120)
#   KUBE_STOP_TIMEOUT    seconds between TERM and KILL (default 15)
#   KUBE_BUILD_JOBS      go build -p (default 2)
#   KUBE_APISERVER_ARGS  extra kube-apiserver flags for `start` (split on spaces), kept in
#                        DIR/apiserver.args for `restart-apiserver`; e.g. "--watch-cache=false"
#                        makes etcd compaction visible to watches at once (docs/peers.md)
#   GO, PYTHON, CURL     executables (default go, else /usr/local/go/bin/go; python3; curl)
# Recipe, measurements and rationale: docs/peers.md.
set -euo pipefail

K8S_VERSION=1.34.3
ETCD_VERSION=3.6.4
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEER=kube
PEER_SCRIPT=${BASH_SOURCE[0]}
# shellcheck source=tools/peers/peer_lib.sh
source "$HERE/peer_lib.sh"   # log, die, now, elapsed, alive, usage, parse_dir
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${COLONY_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colony/peers}
KCACHE="$CACHE/kube-$K8S_VERSION"
ECACHE="$CACHE/etcd-$ETCD_VERSION"
KBIN="$KCACHE/bin"
EBIN="$ECACHE/bin"
APISERVER="$KBIN/kube-apiserver"
KUBECTL="$KBIN/kubectl"
ETCD="$EBIN/etcd"
PYTHON=${PYTHON:-python3}
CURL=${CURL:-curl}
export PYENV_VERSION=${PYENV_VERSION:-system}   # pyenv shims: use Debian's python3 (stdlib is enough)
READY_TIMEOUT=${KUBE_READY_TIMEOUT:-120}
STOP_TIMEOUT=${KUBE_STOP_TIMEOUT:-15}
ADMIN_TOKEN=colony-admin-token
VIEWER_TOKEN=colony-viewer-token


# ---------------------------------------------------------------- binaries (Go module proxy)
# Each check captures the output first: `cmd | grep -q` under pipefail fails at random (SIGPIPE).
version_ok() {   # $1 binary: true if it exists and reports its pinned version
  local out
  [[ -x "$1" ]] || return 1
  case "${1##*/}" in
    etcd) out=$("$1" --version 2>/dev/null) || return 1
          [[ $'\n'"$out"$'\n' == *$'\n'"etcd Version: $ETCD_VERSION"$'\n'* ]] ;;
    kube-apiserver) out=$("$1" --version 2>/dev/null) || return 1
          [[ "$out" == "Kubernetes v$K8S_VERSION" ]] ;;
    kubectl) out=$("$1" version --client 2>/dev/null) || return 1
          [[ $'\n'"$out"$'\n' == *$'\n'"Client Version: v$K8S_VERSION"$'\n'* ]] ;;
    *) return 1 ;;
  esac
}

bins_ok() { version_ok "$ETCD" && version_ok "$APISERVER" && version_ok "$KUBECTL"; }

find_go() {
  GO=${GO:-$(command -v go || true)}
  [[ -n "$GO" ]] || { [[ -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go; }
  [[ -n "$GO" && -x "$GO" ]] || die "go not found (need Go >= 1.24; set GO=/path/to/go)"
}

# Go's environment for every build step: caches under the cache root, no toolchain download,
# static binaries.
go_env() {
  export GOMODCACHE="$CACHE/gomod" GOCACHE="$CACHE/gobuild" GOTOOLCHAIN=local CGO_ENABLED=0
}

# Runs a Go command at nice 10, its output into the build log; dumps the log tail on failure.
run_go() {   # $1 log file, rest: the command
  local lf=$1; shift
  echo "+ $*" >>"$lf"
  if ! nice -n 10 "$@" >>"$lf" 2>&1; then
    log "failed: $*; tail of $lf:"; tail -n 40 "$lf" >&2
    return 1
  fi
}

# The `go` line of a module's published go.mod (downloads the module into GOMODCACHE).
upstream_go_line() {   # $1 module@version
  local gomod
  gomod=$("$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f "$gomod" ]] || die "go mod download $1 gave no go.mod"
  sed -nE 's/^go ([0-9.]+)$/\1/p' "$gomod"
}

# etcd: server/v3 is itself package main. Its go.mod has replace directives, so `go install
# pkg@version` is refused; as a requirement of a scratch module the replaces are ignored. The
# scratch module is never `go mod tidy`-ed: nothing imports etcd's main package, so tidy would
# drop the requirement and `-mod=mod` would then build the latest etcd. Hence also the
# --version check after the build.
build_etcd() {
  local src="$ECACHE/src" lf="$ECACHE/build.log" t0 tmp
  t0=$(now); mkdir -p "$ECACHE" "$EBIN"; : >"$lf"
  if [[ ! -f "$src/.ready" ]]; then
    log "etcd $ETCD_VERSION: resolving modules (scratch module $src)"
    rm -rf "$src"; mkdir -p "$src"
    local goline; goline=$( cd "$src" && upstream_go_line "go.etcd.io/etcd/server/v3@v$ETCD_VERSION")
    ( cd "$src" &&
      run_go "$lf" "$GO" mod init colony.invalid/etcd-peer &&
      run_go "$lf" "$GO" mod edit -go="$goline" &&
      run_go "$lf" "$GO" get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" ) || die "etcd module resolve failed"
    touch "$src/.ready"
  fi
  log "etcd $ETCD_VERSION: compiling (log $lf)"
  tmp="$EBIN/etcd.tmp.$$"
  ( cd "$src" && run_go "$lf" "$GO" build -mod=mod -p "${KUBE_BUILD_JOBS:-2}" -v -trimpath -ldflags "-s -w" \
        -o "$tmp" go.etcd.io/etcd/server/v3 ) || { rm -f "$tmp"; die "etcd build failed"; }
  mv "$tmp" "$ETCD"
  version_ok "$ETCD" || die "built etcd reports '$("$ETCD" --version 2>&1 | head -n1)', want $ETCD_VERSION"
  log "etcd $ETCD_VERSION built in $(elapsed "$t0") s ($(du -h "$ETCD" | cut -f1))"
}

# kube-apiserver + kubectl: k8s.io/kubernetes requires its staging modules at v0.0.0 and maps them
# to ./staging with replaces that a consumer ignores, so the scratch module replaces each with
# the published v0.<minor>.<patch> (list derived from the proxy's go.mod, it changes between
# minors). `go get -tool` keeps the requirement, and k8s.io/kubernetes stays the only one, so
# minimal version selection reproduces upstream's versions. Same `go` line as upstream, so the
# GODEBUG defaults match upstream builds.
build_kube() {
  local src="$KCACHE/src" lf="$KCACHE/build.log" t0 tmp minor patch m
  t0=$(now); mkdir -p "$KCACHE" "$KBIN"; : >"$lf"
  minor=$(cut -d. -f2 <<<"$K8S_VERSION"); patch=$(cut -d. -f3 <<<"$K8S_VERSION")
  if [[ ! -f "$src/.ready" ]]; then
    log "kubernetes $K8S_VERSION: resolving modules (scratch module $src)"
    rm -rf "$src"; mkdir -p "$src"
    local gomod staging
    gomod=$(cd "$src" && "$GO" mod download -json "k8s.io/kubernetes@v$K8S_VERSION" |
            sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
    [[ -f "$gomod" ]] || die "go mod download k8s.io/kubernetes@v$K8S_VERSION gave no go.mod"
    staging=$(sed -nE 's#^[[:space:]]*(k8s\.io/[A-Za-z0-9._-]+) v0\.0\.0( // indirect)?$#\1#p' "$gomod" | sort -u)
    [[ -n "$staging" ]] || die "no staging modules found in $gomod"
    ( cd "$src" && run_go "$lf" "$GO" mod init colony.invalid/kube-peer ) || die "go mod init failed"
    for m in $staging; do
      ( cd "$src" && "$GO" mod edit -replace="$m=$m@v0.$minor.$patch" ) || die "go mod edit failed"
    done
    ( cd "$src" &&
      run_go "$lf" "$GO" mod edit -go="$(sed -nE 's/^go ([0-9.]+)$/\1/p' "$gomod")" &&
      run_go "$lf" "$GO" get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" &&
      run_go "$lf" "$GO" get -tool "k8s.io/kubernetes/cmd/kubectl@v$K8S_VERSION" ) ||
      die "kubernetes module resolve failed"
    touch "$src/.ready"
    log "kubernetes $K8S_VERSION: $(wc -w <<<"$staging") staging modules replaced with v0.$minor.$patch"
  fi
  # The ldflags only fix /version and `kubectl version` (else v0.0.0-master).
  local ldf="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
  ldf+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ldf+=" -X k8s.io/component-base/version.gitTreeState=clean"
  ldf+=" -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION"
  ldf+=" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  log "kubernetes $K8S_VERSION: compiling kube-apiserver + kubectl (log $lf; ~6-8 min on 2 cores with a cold GOCACHE)"
  tmp="$KBIN/tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
  ( cd "$src" && run_go "$lf" "$GO" build -mod=mod -p "${KUBE_BUILD_JOBS:-2}" -v -trimpath -ldflags "$ldf" \
        -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ) ||
    { rm -rf "$tmp"; die "kubernetes build failed"; }
  mv "$tmp/kube-apiserver" "$APISERVER"; mv "$tmp/kubectl" "$KUBECTL"; rm -rf "$tmp"
  version_ok "$APISERVER" || die "built kube-apiserver reports '$("$APISERVER" --version 2>&1)', want v$K8S_VERSION"
  version_ok "$KUBECTL" || die "built kubectl reports '$("$KUBECTL" version --client 2>&1 | head -n1)', want v$K8S_VERSION"
  log "kube-apiserver + kubectl $K8S_VERSION built in $(elapsed "$t0") s" \
      "($(du -h "$APISERVER" | cut -f1), $(du -h "$KUBECTL" | cut -f1))"
}

ensure_bins() {
  bins_ok && return 0
  find_go
  mkdir -p "$CACHE"
  # One builder at a time per cache; others wait, then find the binaries in place.
  exec 8>"$KCACHE.lock"
  flock -w 3600 8 || die "timed out waiting for $KCACHE.lock"
  if ! bins_ok; then
    local t0; t0=$(now)
    go_env
    log "building with $("$GO" version) (GOMODCACHE $GOMODCACHE, GOCACHE $GOCACHE)"
    version_ok "$ETCD" || build_etcd
    { version_ok "$APISERVER" && version_ok "$KUBECTL"; } || build_kube
    log "install done in $(elapsed "$t0") s; caches: $(du -sh "$CACHE/gomod" "$CACHE/gobuild" 2>/dev/null |
        awk '{ printf "%s%s %s", sep, $2, $1; sep = ", " }')"
    # The binaries are kept per version; Go's caches (about 3 GB) would only serve a rebuild of
    # the same version, and the disk is the sanitizer build's.
    "$GO" clean -cache -modcache || log "go clean failed (caches left in $CACHE)"
  fi
  flock -u 8; exec 8>&-
}

cmd_install() {
  local t0; t0=$(now)
  ensure_bins
  log "etcd $ETCD_VERSION, kube-apiserver + kubectl v$K8S_VERSION ready in $(elapsed "$t0") s"
  echo "$KBIN"
}


lock_dir() {    # serialises start/stop/kill/restart on one DIR; fd 9 is never passed to a server
  exec 9>"$DIR/.lock"
  flock -w $((READY_TIMEOUT + 2 * STOP_TIMEOUT + 120)) 9 || die "timed out waiting for $DIR/.lock"
}

# True if PID is alive and is our etcd / apiserver for this DIR (guards against PID reuse).
is_our() {   # $1 etcd|apiserver, $2 pid
  local pid=$2 cmd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  case $1 in
    etcd) [[ "$cmd" == *etcd*"--data-dir=$DIR/etcd-data "* ]] ;;
    apiserver) [[ "$cmd" == *kube-apiserver*"--cert-dir=$DIR/certs "* ]] ;;
  esac
}


pid_of() { [[ -f "$DIR/$1.pid" ]] && cat "$DIR/$1.pid"; }      # $1 etcd|apiserver
up() { local p; p=$(pid_of "$1") && is_our "$1" "$p"; }
running() { up etcd && up apiserver && [[ -f "$DIR/kubeconfig" && -f "$DIR/ports" ]]; }

# ETCD_PORT ETCD_PEER_PORT API_PORT of this DIR.
read_ports() {
  [[ -f "$DIR/ports" ]] || return 1
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT <"$DIR/ports"
  [[ -n "${API_PORT:-}" ]]
}

# Three distinct free loopback ports (the sockets are held open together so they differ).
free_ports() {
  "$PYTHON" -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))'
}

kill_proc() {   # $1 etcd|apiserver, $2 pid: TERM, wait STOP_TIMEOUT, KILL; returns once it has exited
  local what=$1 pid=$2 i
  is_our "$what" "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do alive "$pid" || return 0; sleep 0.1; done
  log "$what $pid ignored TERM for ${STOP_TIMEOUT}s; sending KILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do alive "$pid" || return 0; sleep 0.1; done
  die "$what $pid survived KILL"
}

stop_all() {    # apiserver first (it is etcd's client), then etcd
  local p
  p=$(pid_of apiserver 2>/dev/null) || true; [[ -n "$p" ]] && kill_proc apiserver "$p"
  p=$(pid_of etcd 2>/dev/null) || true; [[ -n "$p" ]] && kill_proc etcd "$p"
  rm -f "$DIR/apiserver.pid" "$DIR/etcd.pid"
}

clean_data() {  # logs and tokens.csv stay for post-mortems
  rm -rf "$DIR/etcd-data" "$DIR/certs" "$DIR/sa.key" "$DIR/ca.crt" "$DIR/kubeconfig" "$DIR/ports" \
         "$DIR/apiserver.args" "$DIR/apiserver.pid" "$DIR/etcd.pid"
}

# setsid: the servers outlive this script and ignore the caller's terminal signals; all fds are
# redirected so a capturing parent (ctest, $(...)) is not kept waiting.
launch() {   # $1 log file, rest: command; sets LAUNCHED_PID
  local lf=$1; shift
  local launcher=(); command -v setsid >/dev/null && launcher=(setsid)
  "${launcher[@]}" "$@" </dev/null >"$lf" 2>&1 8>&- 9>&- &
  LAUNCHED_PID=$!
}

port_clash() { local out; out=$(grep -E 'address already in use' "$1" 2>/dev/null) && [[ -n "$out" ]]; }

deadline_passed() { [[ $(elapsed "$1" | cut -d. -f1) -ge $READY_TIMEOUT ]]; }

# rc 0 healthy, 2 port clash, 1 other failure.
start_etcd() {   # $1 t0
  local t0=$1 pid out
  mkdir -p "$DIR/etcd-data"; chmod 700 "$DIR/etcd-data"
  # --unsafe-no-fsync: throw-away test data; saves seconds per write burst on a loaded disk.
  launch "$DIR/etcd.log" "$ETCD" --name colony "--data-dir=$DIR/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "colony=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --log-level warn
  pid=$LAUNCHED_PID; echo "$pid" >"$DIR/etcd.pid"
  while :; do
    if ! alive "$pid"; then
      sleep 0.2; port_clash "$DIR/etcd.log" && return 2
      log "etcd exited before it was healthy; tail of $DIR/etcd.log:"; tail -n 30 "$DIR/etcd.log" >&2
      return 1
    fi
    out=$("$CURL" --noproxy "*" -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null) || out=""
    [[ "$out" == *'"health":"true"'* ]] && return 0
    if deadline_passed "$t0"; then
      log "etcd not healthy after ${READY_TIMEOUT}s; tail of $DIR/etcd.log:"; tail -n 30 "$DIR/etcd.log" >&2
      kill_proc etcd "$pid"; return 1
    fi
    sleep 0.1
  done
}

# The serving certificate the apiserver generates in --cert-dir holds the leaf, then its CA;
# clients get the CA alone (second PEM block). It is valid for 127.0.0.1, not localhost.
split_ca() {
  awk '/-----BEGIN CERTIFICATE-----/ { n++ } n == 2 { print } /-----END CERTIFICATE-----/ && n == 2 { exit }' \
    "$DIR/certs/apiserver.crt" >"$DIR/ca.crt.tmp"
  [[ -s "$DIR/ca.crt.tmp" ]] || { rm -f "$DIR/ca.crt.tmp"; return 1; }
  mv "$DIR/ca.crt.tmp" "$DIR/ca.crt"
}

write_kubeconfig() {
  cat >"$DIR/kubeconfig.tmp" <<EOF
# written by tools/peers/kube.sh; see docs/peers.md
apiVersion: v1
kind: Config
clusters:
- name: colony-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/ca.crt
users:
- name: colony-admin
  user:
    token: $ADMIN_TOKEN
contexts:
- name: colony-test
  context:
    cluster: colony-test
    user: colony-admin
current-context: colony-test
EOF
  chmod 600 "$DIR/kubeconfig.tmp"; mv "$DIR/kubeconfig.tmp" "$DIR/kubeconfig"
}

# Flags per docs/peers.md: loopback only; generated serving certs; the endpoint reconciler off
# (127.0.0.1 cannot be a Service endpoint); ServiceAccount (no controller creates the default
# account) and TaintNodesByCondition (nothing would remove its not-ready taint) admission off.
# rc 0 ready, 2 port clash, 1 other failure.
start_apiserver() {   # $1 t0
  local t0=$1 pid out
  mkdir -p "$DIR/certs"
  # shellcheck disable=SC2206  # word splitting of the extra flags is intended
  local EXTRA_ARGS=($(cat "$DIR/apiserver.args" 2>/dev/null))
  launch "$DIR/apiserver.log" "$APISERVER" \
    "--etcd-servers=http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 "--secure-port=$API_PORT" \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    "--cert-dir=$DIR/certs" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    "--service-account-key-file=$DIR/sa.key" "--service-account-signing-key-file=$DIR/sa.key" \
    "--token-auth-file=$DIR/tokens.csv" \
    --authorization-mode=RBAC \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    --allow-privileged=true --v=1 "${EXTRA_ARGS[@]}"
  pid=$LAUNCHED_PID; echo "$pid" >"$DIR/apiserver.pid"
  while :; do
    if ! alive "$pid"; then
      sleep 0.2; port_clash "$DIR/apiserver.log" && return 2
      log "kube-apiserver exited before it was ready; tail of $DIR/apiserver.log:"
      tail -n 30 "$DIR/apiserver.log" >&2
      return 1
    fi
    if [[ -s "$DIR/certs/apiserver.crt" ]] && { [[ -s "$DIR/ca.crt" ]] || split_ca; }; then
      out=$("$CURL" --noproxy "*" -sS --max-time 5 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
             "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null) || out=""
      [[ "$out" == ok ]] && return 0
    fi
    if deadline_passed "$t0"; then
      log "kube-apiserver not ready after ${READY_TIMEOUT}s; tail of $DIR/apiserver.log:"
      tail -n 30 "$DIR/apiserver.log" >&2
      kill_proc apiserver "$pid"; return 1
    fi
    sleep 0.2
  done
}

# One start attempt on fresh ports. rc 0 ready, 2 port clash (retry), 1 other failure.
try_start() {   # $1 t0
  local t0=$1 rc
  clean_data
  echo "$ETCD_PORT $ETCD_PEER_PORT $API_PORT" >"$DIR/ports"
  echo "${KUBE_APISERVER_ARGS:-}" >"$DIR/apiserver.args"
  openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null || { log "openssl genrsa failed"; return 1; }
  chmod 600 "$DIR/sa.key"
  # --token-auth-file: token,user,uid[,"group1,group2"]; system:masters bypasses RBAC.
  printf '%s\n' "$ADMIN_TOKEN,colony-admin,colony-admin-uid,\"system:masters\"" \
                "$VIEWER_TOKEN,colony-viewer,colony-viewer-uid" >"$DIR/tokens.csv"
  chmod 600 "$DIR/tokens.csv"
  rc=0; start_etcd "$t0" || rc=$?
  ((rc == 0)) || return $rc
  log "etcd pid $(pid_of etcd) healthy on 127.0.0.1:$ETCD_PORT in $(elapsed "$t0") s"
  rc=0; start_apiserver "$t0" || rc=$?
  ((rc == 0)) || { stop_all; return $rc; }
  write_kubeconfig
  log "kube-apiserver pid $(pid_of apiserver) ready on https://127.0.0.1:$API_PORT in $(elapsed "$t0") s (dir $DIR)"
}

cmd_start() {
  ensure_bins
  command -v openssl >/dev/null || die "openssl not found"
  command -v "$CURL" >/dev/null || die "curl not found"
  lock_dir
  if running; then echo "$DIR/kubeconfig"; return 0; fi
  stop_all     # a half-started leftover (interrupted start, or a killed apiserver)
  local t0 attempt ports rc
  t0=$(now)
  for attempt in 1 2 3; do
    ports=$(free_ports)
    read -r ETCD_PORT ETCD_PEER_PORT API_PORT <<<"$ports"
    rc=0; try_start "$t0" || rc=$?
    case $rc in
      0) echo "$DIR/kubeconfig"; return 0 ;;
      2) log "port clash on attempt $attempt; retrying with new ports"; stop_all ;;
      *) stop_all; clean_data; exit 1 ;;
    esac
  done
  clean_data; die "could not bind free ports after 3 attempts"
}

cmd_stop() {
  lock_dir
  local t0 pa pe; t0=$(now)
  pa=$(pid_of apiserver 2>/dev/null) || true; pe=$(pid_of etcd 2>/dev/null) || true
  [[ -n "$pa" ]] && is_our apiserver "$pa" || pa=""
  [[ -n "$pe" ]] && is_our etcd "$pe" || pe=""
  if [[ -n "$pa" || -n "$pe" ]]; then
    stop_all
    log "stopped apiserver ${pa:-(not running)} and etcd ${pe:-(not running)} in $(elapsed "$t0") s"
  else
    log "not running (dir $DIR)"
  fi
  clean_data
}

cmd_kill_apiserver() {
  local sig=KILL
  if [[ ${#ARGS[@]} -ge 1 ]]; then
    [[ ${#ARGS[@]} -eq 2 && ${ARGS[0]} == --signal && ${ARGS[1]} =~ ^(KILL|TERM)$ ]] ||
      die "usage: kube.sh kill-apiserver [--dir DIR] [--signal KILL|TERM]"
    sig=${ARGS[1]}
  fi
  lock_dir
  local p; p=$(pid_of apiserver 2>/dev/null) || true
  if [[ -z "$p" ]] || ! is_our apiserver "$p"; then log "apiserver not running (dir $DIR)"; return 0; fi
  local t0 i; t0=$(now)
  if [[ $sig == TERM ]]; then
    kill_proc apiserver "$p"
  else
    kill -KILL "$p" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do alive "$p" || break; sleep 0.1; done
    alive "$p" && die "apiserver $p survived KILL"
  fi
  rm -f "$DIR/apiserver.pid"
  log "killed apiserver pid $p with $sig in $(elapsed "$t0") s; etcd, certs and port kept"
}

cmd_restart_apiserver() {
  ensure_bins
  lock_dir
  if running; then echo "$DIR/kubeconfig"; return 0; fi
  read_ports && [[ -f "$DIR/tokens.csv" && -f "$DIR/sa.key" && -s "$DIR/certs/apiserver.crt" ]] ||
    die "nothing to restart in $DIR (no ports, tokens, key or certs); use start"
  up etcd || die "etcd of $DIR is not running; use stop, then start"
  local p; p=$(pid_of apiserver 2>/dev/null) || true
  [[ -n "$p" ]] && kill_proc apiserver "$p"
  local t0 rc; t0=$(now)
  rc=0; start_apiserver "$t0" || rc=$?
  case $rc in
    0) write_kubeconfig
       log "kube-apiserver pid $(pid_of apiserver) ready again on https://127.0.0.1:$API_PORT in $(elapsed "$t0") s"
       echo "$DIR/kubeconfig" ;;
    2) rm -f "$DIR/apiserver.pid"; die "port $API_PORT is taken by another process; cannot restart on the same address" ;;
    *) rm -f "$DIR/apiserver.pid"; die "restart failed; see $DIR/apiserver.log" ;;
  esac
}

cmd_status() {
  if running && read_ports; then echo "running https://127.0.0.1:$API_PORT"; return 0; fi
  if up etcd; then log "etcd is up, the apiserver is not (dir $DIR)"; fi
  echo "not running"; return 3
}

cmd_env() {
  running && read_ports || { log "not running (dir $DIR)"; return 3; }
  echo "KUBECONFIG=$DIR/kubeconfig"
  echo "KUBE_API=https://127.0.0.1:$API_PORT"
  echo "KUBE_CA=$DIR/ca.crt"
  echo "KUBE_TOKEN=$ADMIN_TOKEN"
  echo "KUBE_VIEWER_TOKEN=$VIEWER_TOKEN"
  echo "ETCD_ENDPOINT=http://127.0.0.1:$ETCD_PORT"
  echo "KUBE_DIR=$DIR"
  echo "KUBECTL=$KUBECTL"
  echo "KUBE_APISERVER_PID=$(pid_of apiserver)"
  echo "ETCD_PID=$(pid_of etcd)"
  echo "KUBE_APISERVER_LOG=$DIR/apiserver.log"
  echo "ETCD_LOG=$DIR/etcd.log"
}

# Compaction goes through etcd's v3 JSON gateway on the client port (on by default,
# --enable-grpc-gateway): two curl calls, where etcdctl would be one more scratch module and
# build (go.etcd.io/etcd/etcdctl/v3) for nothing else. int64 fields are JSON strings there.
cmd_compact() {
  up etcd && read_ports || die "etcd of $DIR is not running"
  local out rev
  # Any key: the response header carries the store's current revision.
  out=$("$CURL" --noproxy "*" -fsS --max-time 10 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" \
         -d '{"key":"Y29sb255","count_only":true}') || die "etcd range request failed"
  rev=$("$PYTHON" -c 'import json,sys; print(int(json.load(sys.stdin)["header"]["revision"]))' <<<"$out") ||
    die "no revision in etcd's answer: $out"
  out=$("$CURL" --noproxy "*" -sS --max-time 60 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" \
         -d "{\"revision\":\"$rev\",\"physical\":true}") || die "etcd compaction request failed"
  if [[ "$out" == *'"error"'* || "$out" == *'"code"'* ]]; then
    # The apiserver compacts every 5 minutes itself; compacting to the same revision again is fine.
    [[ "$out" == *"required revision has been compacted"* ]] || die "etcd compaction at $rev failed: $out"
  fi
  log "etcd compacted at revision $rev"
  echo "$rev"
}

# ---------------------------------------------------------------- API helpers (curl + admin token)
api() {   # $1 method, $2 path, rest: extra curl args; prints the body, then a line with the HTTP code
  local m=$1 p=$2; shift 2
  "$CURL" --noproxy "*" -sS --max-time 30 --cacert "$DIR/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
    -X "$m" -w '\n%{http_code}' "$@" "https://127.0.0.1:$API_PORT$p"
}

crd_established() {   # $1 CRD name; conditions are null right after creation
  local out
  out=$(api GET "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1") || return 1
  [[ "${out##*$'\n'}" == 200 ]] || return 1
  "$PYTHON" -c '
import json, sys
crd = json.load(sys.stdin)
conds = (crd.get("status") or {}).get("conditions") or []
sys.exit(0 if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds) else 1)' <<<"${out%$'\n'*}"
}

# metadata.name of a single-document CRD file (controller-gen layout: two-space indents).
crd_name() {
  awk '/^metadata:/ { m = 1; next } m && /^[^ #]/ { exit }
       m && /^  name:/ { sub(/^  name:[ \t]*/, ""); gsub(/["\x27 \t\r]/, ""); print; exit }' "$1"
}

cmd_apply_crds() {
  running && read_ports || die "no apiserver running in $DIR"
  local sources=("${ARGS[@]}")
  if ((${#sources[@]} == 0)); then
    sources=("${COLONY_KOORDINATOR_CRDS:-$ROOT/../shared/koordinator-crds}")
  fi
  local files=() s f
  for s in "${sources[@]}"; do
    if [[ -d "$s" ]]; then
      # kustomization.yaml (deploy/crds has one for `kubectl apply -k`) is no CRD
      while IFS= read -r f; do files+=("$f"); done < <(find "$s" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.yml' \) ! -name 'kustomization.y*ml' | sort)
    elif [[ -f "$s" ]]; then
      files+=("$s")
    else
      die "no such CRD file or folder: $s"
    fi
  done
  ((${#files[@]})) || die "no *.yaml files in ${sources[*]}"
  local t0 out code names=() docs n split="$DIR/crds.tmp"
  t0=$(now); rm -rf "$split"; mkdir -p "$split"
  for f in "${files[@]}"; do
    # one request per document: split multi-document files on "---" lines
    awk -v dir="$split" -v base="$(basename "$f")" '
      /^---[ \t]*$/ { if (has) n++; has = 0; next }
      { if ($0 !~ /^[ \t]*(#.*)?$/) has = 1; print > (dir "/" base "." n ".yaml") }' n=0 "$f"
  done
  for f in "$split"/*.yaml; do
    docs=$(grep -c '^kind:' "$f" || true)
    [[ "$docs" -ge 1 ]] || continue
    n=$(crd_name "$f"); [[ -n "$n" ]] || die "no metadata.name in $f"
    out=$(api PATCH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$n?fieldManager=colony-tests&force=true" \
            -H 'Content-Type: application/apply-patch+yaml' --data-binary @"$f") || die "apply of $n failed: $out"
    code=${out##*$'\n'}
    [[ "$code" == 200 || "$code" == 201 ]] || die "apply of CRD $n: HTTP $code: ${out%$'\n'*}"
    names+=("$n")
  done
  rm -rf "$split"
  for n in "${names[@]}"; do
    until crd_established "$n"; do
      deadline_passed "$t0" && die "CRD $n not Established after ${READY_TIMEOUT}s"
      sleep 0.2
    done
  done
  log "applied ${#names[@]} CRDs, all Established, in $(elapsed "$t0") s"
  printf '%s\n' "${names[@]}"
}

# Koordinator's PriorityClasses with the values its chart installs (the lower bounds of the
# ranges in apis/extension/priority.go; the same table as sim/sim_config.cpp). Pods that name one
# get its value through the Priority admission plugin; a missing class is refused with 403.
cmd_priority_classes() {
  running && read_ports || die "no apiserver running in $DIR"
  local pc v out code
  for pc in koord-prod=9000 koord-mid=7000 koord-batch=5000 koord-free=3000; do
    v=${pc#*=}; pc=${pc%=*}
    out=$(api POST /apis/scheduling.k8s.io/v1/priorityclasses -H 'Content-Type: application/json' \
            -d "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"$pc\"},\"value\":$v,\"globalDefault\":false,\"description\":\"Koordinator $pc (tools/peers/kube.sh)\"}") ||
      die "create PriorityClass $pc failed"
    code=${out##*$'\n'}
    [[ "$code" == 201 || "$code" == 409 ]] || die "create PriorityClass $pc: HTTP $code: ${out%$'\n'*}"
    echo "$pc $v"
  done
}


main() {
  (($#)) || usage
  local cmd=$1; shift
  case "$cmd" in
    install) (($# == 0)) || die "install takes no arguments"; cmd_install ;;
    start) parse_dir "$@"; cmd_start ;;
    stop) parse_dir "$@"; cmd_stop ;;
    status) parse_dir "$@"; cmd_status ;;
    env) parse_dir "$@"; cmd_env ;;
    kill-apiserver) NEED_ARGS=1 parse_dir "$@"; cmd_kill_apiserver ;;
    restart-apiserver) parse_dir "$@"; cmd_restart_apiserver ;;
    compact) parse_dir "$@"; cmd_compact ;;
    apply-crds) NEED_ARGS=1 parse_dir "$@"; cmd_apply_crds ;;
    priority-classes) parse_dir "$@"; cmd_priority_classes ;;
    -h|--help|help) usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}

main "$@"
