#!/usr/bin/env bash
# member_dies.sh TERN: four peers on a 2x2 grid, a (0,0), v (1,0), b (0,1), c (1,1). Round 0
# groups a with v and b with c; v dies as soon as its group is formed, before sending a byte
# (TERN_SWARM_FAULT=exit-after-match, a failpoint in butterfly.c). a must name v as failed and
# end its round within 5 s, not sit out the reduce deadline (half of --timeout 20: 10 s): its
# connections to v are refused, so v's part will not come either. a then reaches round 1 while
# b still waits for it on their shared line and averages with it. Before this, the survivor of
# a dead partner lost the whole deadline, came to every later round after its partners had
# closed their groups, and never averaged again (the WAN test, in CI). Weights: a, b and c end
# with exactly 3 between them.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "member-$$" --grid 2,2 --rounds 2 --dim 3000 --match-timeout 6 --timeout 20
        --peers 4)
start_peer a --listen 127.0.0.1:0 "${common[@]}" --coord 0,0 --init-peer 0
A=$(addr_of a)
TERN_SWARM_FAULT=exit-after-match start_peer v --listen 127.0.0.1:0 --join "$A" "${common[@]}" \
  --coord 1,0 --init-peer 1
start_peer b --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 0,1 --init-peer 2
start_peer c --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 1,1 --init-peer 3
code=0
wait "$PID_v" || code=$?
[ "$code" -eq 9 ] || fail "the victim exited with $code, not the failpoint's 9: the fault did not fire"
for p in a b c; do wait "$(eval echo \$PID_$p)" || fail "survivor $p exited with an error"; done
grep -q '^round 0 group 2 failed 1 ' "$WORK/a.out" || fail "a did not name v as failed in round 0"
took=$(awk '/^round 0 / { for (i = 1; i <= NF; i++) if ($i == "averaging") print $(i + 1) }' "$WORK/a.out")
awk -v t="$took" 'BEGIN { exit !(t < 5) }' || fail "a's round 0 averaging took $took s (limit 5)"
grep -q '^round 1 group 2 failed 0 ' "$WORK/a.out" || fail "a did not average with b in round 1"
total=$(cat "$WORK"/[abc].out | awk '/^final/ { s += $3 } END { printf "%.12g", s }')
awk -v t="$total" 'BEGIN { d = t - 3; exit !(d < 1e-9 && d > -1e-9) }' ||
  fail "the survivors' weights sum to $total, not 3"
echo "OK: v died in its group; a named it after $took s, averaged with b in round 1; weights sum $total"
