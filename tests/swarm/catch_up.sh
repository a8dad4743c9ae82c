#!/usr/bin/env bash
# catch_up.sh TERN: three peers on one line (--grid 3), a and b averaging back to back, c
# spending 1.5 s between rounds (--compute 1.5: a slow trainer), about three of a and b's
# rounds. c reaches each round after a and b have closed its group and moved on. A peer told
# "too late" (SWARM_REJECT_LATE) learns the round the others are at, jumps to it and joins at
# once (match.c), so c averages with both again and again, skipping the rounds it missed. It
# never jumps past the last round (--rounds): when a and b have finished, the round they report
# open is 24, one that nobody runs; c then ends in round 23, alone if need be.
# Without the jump c only ever comes one round late and averages alone to the end: the test
# fails. Weights: exactly 3 between them at the end.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "catchup-$$" --grid 3 --rounds 24 --dim 3000 --match-timeout 2 --timeout 4
        --peers 3 --show 1)
start_peer a --listen 127.0.0.1:0 "${common[@]}" --coord 0 --init-peer 0
A=$(addr_of a)
start_peer b --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 1 --init-peer 1
start_peer c --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord 2 --init-peer 2 --compute 1.5
for p in a b c; do wait "$(eval echo \$PID_$p)" || fail "peer $p exited with an error"; done
for p in a b c; do
  grep '^round' "$WORK/$p.out" | tail -1 | grep -q '^round 23 ' || fail "$p did not end in round 23"
done
together=$(grep -c '^round [0-9]* group 3 failed 0 ' "$WORK/c.out")
ran=$(grep -c '^round' "$WORK/c.out")
jumps=$(awk '/^round/ { if (seen && $2 > last + 1) j++; last = $2; seen = 1 } END { print j + 0 }' "$WORK/c.out")
[ "$jumps" -gt 0 ] || fail "c never skipped a round"
[ "$together" -ge 3 ] || fail "c averaged with both others in $together of its $ran rounds (3 needed)"
total=$(cat "$WORK"/[abc].out | awk '/^final/ { s += $3 } END { printf "%.12g", s }')
awk -v t="$total" 'BEGIN { d = t - 3; exit !(d < 1e-9 && d > -1e-9) }' ||
  fail "the weights sum to $total, not 3"
echo "OK: c ran $ran of 24 rounds ($jumps jumps), $together of them with a and b; weights sum $total"
