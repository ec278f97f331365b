#!/usr/bin/env bash
# Fails if messages/colony.fbs is not a valid evolution of every released schema in
# messages/history/ (fields only appended, none removed, renumbered or retyped).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
shopt -s nullglob
for old in messages/history/colony.v*.fbs; do
  if flatc --conform "$old" -o /tmp messages/colony.fbs >/tmp/colony-conform.log 2>&1; then
    echo "schema: colony.fbs conforms to $old"
  else
    echo "schema: colony.fbs is NOT a valid evolution of $old:" >&2
    cat /tmp/colony-conform.log >&2
    status=1
  fi
done
exit $status
