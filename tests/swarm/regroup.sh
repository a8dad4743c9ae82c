#!/usr/bin/env bash
# regroup.sh TERN: four peers on a 2x2 grid, values 0, 10, 20, 30 at (0,0), (1,0), (0,1), (1,1).
# Round 0 averages each row: {p0, p1} -> 5, {p2, p3} -> 25. Then p1 and p2 are SIGKILLed: the
# survivors p0 (5) and p3 (25) share no line of the grid, so on a fixed grid each would be alone
# in every later round and never agree. They must meet in the round's pool instead and both end
# at the global average 15, with weights summing to the 2 they held. --compute 1 (a second
# of "training" between rounds) lets the kills land between rounds 0 and 1.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "regroup-$$" --grid 2,2 --rounds 6 --dim 1000 --target-group 2 --min-group 2
        --match-timeout 2 --timeout 2 --show 1 --compute 1)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --coord 0,0 --value 0
A=$(addr_of p0)
start_peer p1 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 1,0 --value 10
start_peer p2 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 0,1 --value 20
start_peer p3 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 1,1 --value 30
for v in p1 p2; do
  for _ in $(seq 500); do grep -q '^round 0 ' "$WORK/$v.out" 2>/dev/null && break; sleep 0.02; done
  grep -q '^round 0 group 2 failed 0 parts 2/2' "$WORK/$v.out" || fail "$v did not finish round 0 in a full group"
  kill -9 "$(eval echo \$PID_$v)"
done
for s in p0 p3; do wait "$(eval echo \$PID_$s)" || fail "survivor $s exited with an error"; done
grep -q '^final' "$WORK/p1.out" "$WORK/p2.out" && fail "a victim finished before the kill: the test proved nothing"
total=0
for s in p0 p3; do
  grep -q '^round 0 group 2 failed 0 parts 2/2' "$WORK/$s.out" || fail "$s: round 0 was not a full row"
  line=$(grep '^final' "$WORK/$s.out") || fail "$s printed no final line"
  v=$(echo "$line" | awk '{ print $7 }')
  close_to "$v" 15 1e-6 || fail "$s holds $v, not the global average 15 (no re-grouping?)"
  total=$(awk -v a="$total" -v b="$(echo "$line" | awk '{ print $3 }')" 'BEGIN { printf "%.12g", a + b }')
done
close_to "$total" 2 1e-9 || fail "the survivors' weights sum to $total, not 2"
grep -q " pool" "$WORK/p0.out" "$WORK/p3.out" || fail "no survivor reported a round in the pool"
echo "OK: survivors with no common line met in the pool: both hold 15, weights sum $total"
