#!/usr/bin/env bash
# region_half_mixed.sh TERN: 6 peers in 3 regions (a: p0 p1, b: p2 p3, c: p4 p5), f32, unequal
# values, equal weights, 4 rounds; p5 offers no half (failpoint no-half-offer), though its
# state is its region's. Its cross-region line therefore averages the whole vector while the
# other line carries a half; the partners then say so and nobody adopts a half
# (src/swarm/half.c): the peers do not all hold one vector after 4 rounds, but what averaging
# keeps must stay exact: the sum over peers of weight x mean (every element's weighted sum) and
# the total weight. A swap that adopted here would move the first. (Equal weights: a peer that
# kept its other half holds two slice weights, merged into one by length as for a failed part
# of an all-reduce, which is exact only when they are equal: docs/SWARM.md.)
source "$(dirname "$0")/lib.sh" "$1"
N=6 DIM=20000
for i in $(seq 0 $((N - 1))); do
  fault=""
  [ "$i" -eq 5 ] && fault=no-half-offer
  TERN_SWARM_FAULT=$fault TERN_DEBUG=INFO start_joined "p$i" "$i" \
    --run-id "halfmix-$$" --region "r$((i / 2))" --grid 2,3 --dim "$DIM" \
    --value "$(grid_value "$i")" --weight 1 --rounds 4 --bandwidth 1e8 \
    --target-group 3 --match-timeout 16 --timeout 10
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
read -r want _ < <(for i in $(seq 0 $((N - 1))); do grid_value "$i"; done |
  awk '{ s += $1 } END { printf "%.9g %d\n", s / NR, NR }')
wsum=$N
# the weighted sum of the means at the start: sum w (value + mean of k mod 7)
mass=$(awk -v a="$want" -v w="$wsum" -v n="$DIM" 'BEGIN { for (k = 0; k < n; k++) s += k % 7;
  printf "%.12g", w * (a + s / n) }')
total=0 got=0
for i in $(seq 0 $((N - 1))); do
  line=$(grep '^final' "$WORK/p$i.out") || fail "peer $i printed no final line"
  w=$(echo "$line" | awk '{ print $3 }') m=$(echo "$line" | awk '{ print $5 }')
  total=$(awk -v a="$total" -v b="$w" 'BEGIN { printf "%.12g", a + b }')
  got=$(awk -v a="$got" -v w="$w" -v m="$m" 'BEGIN { printf "%.12g", a + w * m }')
done
grep -q 'round 1 group 3 failed 0 parts 3/3' "$WORK/p5.out" ||
  fail "p5 was not in a full cross-region group in round 1: $(grep '^round' "$WORK/p5.out")"
grep -q 'round 1: half: slice [01] .* own values kept' "$WORK"/p[0-4].err ||
  fail "the other line carried no half in round 1: $(grep -h 'half' "$WORK"/p*.err)"
grep -q 'adopted' "$WORK"/p[0-5].err && fail "a half was adopted: $(grep -h 'adopted' "$WORK"/p*.err)"
close_to "$total" "$wsum" 1e-9 || fail "weights sum to $total, not $wsum"
close_to "$got" "$mass" 1e-6 || fail "the sum of weight x mean is $got, it was $mass"
echo "OK: one line by halves, the other whole: nothing adopted; weights $total, weight x mean $got (was $mass)"
