#!/usr/bin/env bash
# Fails if the event log depends on the compiler: builds the colony binary with Clang 14 into
# build-clang (only that target, bench off), runs the same sims with it and with the GCC build,
# and compares the log byte digests and summary.json (wall-clock figures are in timing.json,
# which is not compared). Catches FlatBuffers strings/vectors/tables created as sibling
# arguments of one call, whose order C++ leaves to the compiler (docs/events.md).
#   tools/check_compilers.sh               GCC binary from build/, Clang into build-clang/
#   COLONY_BUILD_DIR=dir ...               the GCC build directory (default: build)
#   COLONY_CLANG_BUILD_DIR=dir ...         the Clang build directory (default: build-clang)
# Exit: 0 same bytes, 1 the compilers disagree (or a sim failed), 2 cannot compare.
set -euo pipefail
cd "$(dirname "$0")/.."

gcc_dir="${COLONY_BUILD_DIR:-build}"
clang_dir="${COLONY_CLANG_BUILD_DIR:-build-clang}"
jobs="${COLONY_JOBS:-2}"

compiler_id() { sed -n 's/^set(CMAKE_CXX_COMPILER_ID "\(.*\)")$/\1/p' "$1"/CMakeFiles/*/CMakeCXXCompiler.cmake; }
compiler() { sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$1/CMakeCache.txt"; }

if [[ ! -f "$gcc_dir/CMakeCache.txt" ]]; then
  echo "check_compilers: no GCC build in $gcc_dir (run tools/setup.sh first)" >&2
  exit 2
fi
if [[ "$(readlink -f "$gcc_dir")" == "$(readlink -f "$clang_dir")" ]]; then
  echo "check_compilers: the Clang build directory must not be the GCC one ($gcc_dir)" >&2
  exit 2
fi
if [[ "$(compiler_id "$gcc_dir")" != GNU ]]; then
  echo "check_compilers: $gcc_dir is not a GCC build ($(compiler "$gcc_dir"))" >&2
  exit 2
fi
# Quiet builds; a failing one shows its last lines (Ninja prints compile errors on stdout).
quiet() {
  local out
  if ! out=$("$@" 2>&1); then
    echo "check_compilers: failed: $*" >&2
    tail -n 40 <<<"$out" >&2
    exit 2
  fi
}
quiet cmake --build "$gcc_dir" -j"$jobs" --target colony
quiet cmake -S . -B "$clang_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCOLONY_BUILD_BENCH=OFF
quiet cmake --build "$clang_dir" -j"$jobs" --target colony
gcc_cxx=$(compiler "$gcc_dir")
clang_cxx=$(compiler "$clang_dir")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/colony-compilers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

digest() { sed -n 's/.*"log_byte_digest": "\([0-9a-f]*\)".*/\1/p' "$1/summary.json"; }

status=0
# name|sim arguments: the README command (scheduling only), the elastic-quota config, the
# device-joint config (Device objects, joint GPU + RDMA allocations with VFs) and a short window
# of the plain default (usage model: NodeMetricReported, koordlet BeSuppressed).
cases=(
  "readme|--usage-model none --lifetime running-stays"
  "elastic-quota|--config sim/configs/elastic-quota.yaml"
  "device-joint|--config sim/configs/device-joint.yaml"
  "day-114|--lifetime running-stays --from-days 114 --until-days 114.2"
)
for c in "${cases[@]}"; do
  name="${c%%|*}"
  read -r -a args <<<"${c#*|}"
  for side in gcc clang; do
    dir=$gcc_dir
    [[ $side == clang ]] && dir=$clang_dir
    if ! "$dir/colony" sim "${args[@]}" --quiet --out "$tmp/$side-$name" >"$tmp/$side-$name.out" 2>&1; then
      echo "check_compilers: $name: $dir/colony sim ${args[*]} failed:" >&2
      cat "$tmp/$side-$name.out" >&2
      exit 1
    fi
  done
  g=$(digest "$tmp/gcc-$name")
  k=$(digest "$tmp/clang-$name")
  if [[ -z "$g" || "$g" != "$k" ]]; then
    echo "check_compilers: $name: log_byte_digest differs: GCC ($gcc_cxx) ${g:-none}," \
      "Clang ($clang_cxx) ${k:-none}: the log bytes depend on the compiler (a FlatBuffers" \
      "string/vector/table created as a sibling argument of one call? docs/events.md)" >&2
    status=1
  elif ! cmp -s "$tmp/gcc-$name/summary.json" "$tmp/clang-$name/summary.json"; then
    echo "check_compilers: $name: same log_byte_digest $g but summary.json differs:" >&2
    diff "$tmp/gcc-$name/summary.json" "$tmp/clang-$name/summary.json" | head -n 20 >&2 || true
    status=1
  else
    echo "check_compilers: $name: GCC and Clang 14 agree (log_byte_digest $g, summary.json identical)"
  fi
  rm -rf "$tmp/gcc-$name" "$tmp/clang-$name"
done
exit $status
