#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for Colony and builds it into ./build (idempotent).
#   tools/setup.sh            install packages (root or sudo), resolve the Kafka broker, build
#                             kube-apiserver + etcd from the Go module proxy, build Colony
#   COLONY_SKIP_APT=1 ...     skip the package install (already done)
#   COLONY_SKIP_KUBE=1 ...    skip the kube-apiserver + etcd build (kube tests build it on first use)
#   COLONY_BUILD_DIR=dir ...  build somewhere else (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build pkg-config g++ ccache
  libcaf-dev librdkafka-dev libflatbuffers-dev flatbuffers-compiler flatbuffers-compiler-dev
  librocksdb-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libexpected-dev libxxhash-dev libmimalloc-dev
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev
  gnuplot-nox clang-14 libclang-rt-14-dev clang-format clang-tidy
  openjdk-17-jre-headless maven kcat python3-kafka python3-flatbuffers
  python3-prometheus-client
)

if [[ "${COLONY_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# The real Apache Kafka broker for the Kafka tests, cached outside the repository by version.
if [[ -x tools/peers/kafka.sh ]]; then
  tools/peers/kafka.sh install >&2
fi

# The real kube-apiserver + etcd (+ kubectl) for the kube tests, built from the Go module proxy
# (needs Go >= 1.24) and cached outside the repository by version: ~9 min cold on 2 cores, 0.2 s
# warm. COLONY_SKIP_KUBE=1 skips it (the kube-labelled tests then build it on first use).
if [[ -x tools/peers/kube.sh && "${COLONY_SKIP_KUBE:-0}" != 1 ]]; then
  tools/peers/kube.sh install >&2
fi

build="${COLONY_BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${COLONY_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"${COLONY_JOBS:-2}"
