#!/usr/bin/env bash
# pool_new_partners.sh TERN: four peers on a 4x2 grid, one per column: rows {p0, p1} (values 0,
# 10) and {p2, p3} (20, 30) average in round 0, and in round 1 every column holds one peer, so
# all four go to the round's pool. Row 1 starts GAP s after row 0, so p0 and p1 reach the pool
# first and together. Before, they paired there again (a 3x3 grid under TSan re-formed a row so,
# 2026-12-05): nothing new averaged, p0 and p1 still at 5. Now a peer ignores in the pool the
# partners of a whole all-reduce the round before, so every pair of round 1 holds one peer of
# each row and ends at the global average 15, also when a join reaches its row partner by a
# redirect (a peer that follows another sends queued and later joins on to its leader): a pool
# leader turns its last partners away (docs/SWARM.md, "The last peer to start"). (The pool has
# one leader, the lowest id seen, so of four peers that see each other one pair forms and the
# other two may average alone: only the pairs are checked, and that at least one formed.)
source "$(dirname "$0")/lib.sh" "$1"
GAP=1
common=(--run-id "newpart-$$" --grid 4,2 --rounds 2 --dim 1000 --target-group 2 --min-group 2
        --match-timeout 4 --timeout 4 --show 1)
export TERN_DEBUG=INFO
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --coord 0,0 --value 0
A=$(addr_of p0)
start_peer p1 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 1,0 --value 10
sleep "$GAP"
B=$(addr_of p1)
start_peer p2 --listen 127.0.0.1:0 --join "$A" --join "$B" "${common[@]}" --coord 2,1 --value 20
start_peer p3 --listen 127.0.0.1:0 --join "$A" --join "$B" "${common[@]}" --coord 3,1 --value 30
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
pairs=0
for p in p0 p1 p2 p3; do
  grep -q '^round 0 group 2 failed 0 parts 2/2' "$WORK/$p.out" || fail "$p: round 0 was not its row"
  grep -q '^round 1 .* pool' "$WORK/$p.out" || fail "$p: round 1 was not in the pool"
  grep -q '^round 1 group 2 failed 0 parts 2/2' "$WORK/$p.out" || continue
  pairs=$((pairs + 1))
  v=$(grep '^final' "$WORK/$p.out" | awk '{ print $7 }')
  close_to "$v" 15 1e-6 || fail "$p holds $v after a pair in the pool, not 15: it met its row again"
done
[ "$pairs" -ge 2 ] || fail "no pair formed in the pool"
echo "OK: $pairs peers paired in the pool, each with one of the other row (they hold 15)"
