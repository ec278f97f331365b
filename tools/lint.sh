#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over the core modules, warnings as errors.
# Usage: tools/lint.sh [BUILD_DIR]   (needs BUILD_DIR/compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
files=$(git ls-files 'messages/*.cpp' 'stores/*.cpp' 'actors/entities/*.cpp')
clang-tidy -p "$build" --quiet --warnings-as-errors='*' $files
