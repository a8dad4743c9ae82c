#!/usr/bin/env bash
# first_peer_waits.sh TERN: four peers on a 2x2 grid started GAP s apart, all joining p0, in an
# order that puts p0's round-0 partner last: p0 (0,0), then (0,1), (1,1), and (1,0) 3 GAP after
# p0, more than the half matching time p0 reads its line for while nobody new appears (and less
# than the whole, its limit). The two between say hello to p0 as they join. Before, p0 saw
# nobody on its key for MT / 2, gave up round 0 (alone, in the pool) while the others were still
# starting, and the 2-round exact average was lost (the gossip and forged-records tests failed
# so under TSan beside other tests). Now a hello counts as news: every peer must average in full
# lines in both rounds.
source "$(dirname "$0")/lib.sh" "$1"
GAP=1.3 MT=6
export TERN_DEBUG=INFO
common=(--run-id "first-$$" --grid 2,2 --rounds 2 --dim 100 --target-group 2 --min-group 2
        --match-timeout "$MT" --timeout 4 --show 1)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --coord 0,0 --value 0
A=$(addr_of p0)
n=1
for c in 0,1:20 1,1:30 1,0:10; do
  sleep "$GAP"
  start_peer "p$n" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord "${c%:*}" --value "${c#*:}"
  addr_of "p$n" >/dev/null
  n=$((n + 1))
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
at() { awk '/INFO swarm: peer .* listens on/ { split($2, t, ":"); print t[1] * 3600 + t[2] * 60 + t[3]; exit }' "$WORK/$1.err"; }
late=$(awk -v a="$(at p0)" -v b="$(at p3)" 'BEGIN { printf "%.2f", b - a }')
awk -v l="$late" -v m="$MT" 'BEGIN { exit !(l > m / 2) }' ||
  fail "p0's partner started only $late s after it (not > $MT / 2): the test proved nothing"
for p in p0 p1 p2 p3; do
  [ "$(grep -c '^round .* group 2 failed 0 parts 2/2' "$WORK/$p.out")" -eq 2 ] ||
    fail "$p: not 2 full rounds"
  grep -q ' pool' "$WORK/$p.out" && fail "$p went to the pool"
  v=$(grep '^final' "$WORK/$p.out" | awk '{ print $7 }')
  close_to "$v" 15 1e-6 || fail "$p holds $v, not the global average 15"
done
echo "OK: p0's partner started $late s after it (> $MT / 2); both rounds full, all hold 15"
