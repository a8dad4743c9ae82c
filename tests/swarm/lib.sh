# lib.sh: helpers for the swarm's multi-process tests (sourced). Every peer is a `tern swarm`
# process on 127.0.0.1; nothing leaves loopback. Ports come from a base picked per test so that
# tests running side by side do not collide.
set -u
TERN=$1
shift
WORK=$(mktemp -d /tmp/tern-swarm-test.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# addr_of NAME: the "host:port" peer NAME listens on (it binds port 0 and prints it), waiting
# for it at most 10 s.
addr_of() {
  local i
  for i in $(seq 100); do
    local a
    a=$(awk '/^peer .* listening on/ { print $5; exit }' "$WORK/$1.out" 2>/dev/null)
    [ -n "$a" ] && { echo "$a"; return 0; }
    sleep 0.1
  done
  fail "peer $1 did not start"
}

# start_peer NAME ARGS...: starts `tern swarm ARGS` with output in $WORK/NAME.out/.err.
start_peer() {
  local name=$1
  shift
  "$TERN" swarm "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" & # $! is tern itself
  PIDS+=($!)
  eval "PID_$name=$!"
}

# start_joined NAME I ARGS...: start_peer NAME on a port of its own, peer I > 0 joining p0.
start_joined() {
  local name=$1 i=$2 join=()
  shift 2
  if [ "$i" -gt 0 ]; then join=(--join "$(addr_of p0)"); fi
  start_peer "$name" --listen 127.0.0.1:0 "${join[@]}" "$@"
}

fail() {
  echo "FAIL: $*"
  for f in "$WORK"/*.out "$WORK"/*.err; do
    [ -s "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
  done
  exit 1
}

# close_to A B REL: |A - B| <= REL * max(1, |B|)
close_to() {
  awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
    if (m < 1) m = 1; exit !(d <= r * m) }'
}

# Unequal values and weights for peer I of a grid test, and their weighted average over peers
# 0..N-1: grid_average N prints "average total-weight".
grid_value() { echo "$(($1 * 7 % 13)).25"; }
grid_weight() { echo "$((1 + $1 % 3))"; }
grid_average() {
  local i
  for i in $(seq 0 $(($1 - 1))); do echo "$(grid_value "$i") $(grid_weight "$i")"; done |
    awk '{ s += $1 * $2; w += $2 } END { printf "%.9g %.9g\n", s / w, w }'
}

# expect_full ROUNDS GROUP FINAL PEER...: each PEER was in a full group of GROUP with nobody
# dropped in all ROUNDS rounds, and its final line matches the regular expression FINAL.
expect_full() {
  local rounds=$1 group=$2 final=$3 p
  shift 3
  for p in "$@"; do
    [ "$(grep -c "^round .* group $group failed 0 parts $group/$group" "$WORK/$p.out")" -eq "$rounds" ] ||
      fail "$p was not in a full group every round"
    grep -q "$final" "$WORK/$p.out" || fail "$p does not hold the average: $(grep final "$WORK/$p.out")"
  done
}
