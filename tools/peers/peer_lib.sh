# tools/peers/peer_lib.sh — what the peer launchers (kafka.sh, kube.sh) share; sourced, not run.
# The sourcing script sets PEER (its name in messages and its default state folder) and
# PEER_SCRIPT (its path, whose header comment is its usage) first.

log() { echo "$PEER.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# True while PID exists and is not a zombie (a launched child may not have exec'd yet).
alive() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) && [[ ${st%% *} != Z ]]; }

# The header comment of the launcher, on stderr.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$PEER_SCRIPT" >&2; exit 2; }

# ---------------------------------------------------------------- state directory
DIR=""
parse_dir() {   # sets DIR and leaves the remaining positional args in ARGS
  ARGS=()
  while (($#)); do
    case "$1" in
      --dir) [[ $# -ge 2 ]] || die "--dir needs a value"; DIR=$2; shift 2 ;;
      --dir=*) DIR=${1#--dir=}; shift ;;
      *) ARGS+=("$1"); shift ;;
    esac
  done
  [[ "${NEED_ARGS:-0}" == 1 || ${#ARGS[@]} -eq 0 ]] || die "unexpected argument '${ARGS[0]}'"
  DIR=${DIR:-${TMPDIR:-/tmp}/colony-peers-$(id -u)/$PEER}
  mkdir -p "$DIR"; chmod 700 "$DIR"
  DIR=$(cd "$DIR" && pwd)
}
