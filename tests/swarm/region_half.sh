#!/usr/bin/env bash
# region_half.sh TERN: 8 peers in 4 regions (--region r0..r3, two each), f32, unequal values and
# weights, equal declared bandwidths (equal parts), 4 rounds. After a region round each pair
# holds one vector, so in the cross-region rounds each peer carries one half across and the
# partners swap halves (src/swarm/half.c). Every peer must end with the exact weighted average
# (element 0, in the first half, and the mean of all elements, which a stale second half would
# move), the weights must sum to the total, and in each cross-region round in which a peer
# carried a half its bytes across must be about half of what the whole vector costs.
source "$(dirname "$0")/lib.sh" "$1"
N=8 DIM=20000
for i in $(seq 0 $((N - 1))); do
  TERN_DEBUG=INFO start_joined "p$i" "$i" --run-id "half-$$" \
    --region "r$((i / 2))" --grid 2,4 --dim "$DIM" --value "$(grid_value "$i")" \
    --weight "$(grid_weight "$i")" --rounds 4 --bandwidth 1e8 --target-group 4 \
    --match-timeout 16 --timeout 10
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
read -r want wsum < <(grid_average "$N")
# element k is value + k mod 7: the mean over k adds the mean of k mod 7
want_mean=$(awk -v a="$want" -v n="$DIM" 'BEGIN { for (k = 0; k < n; k++) s += k % 7;
  printf "%.9g", a + s / n }')
# One group of 4 with equal parts, the whole vector: 3 contributions of DIM/4 floats (header 40,
# weight 8) and 3 results (header 40, weight and mask 16) out of each peer.
whole=$((3 * (48 + DIM) + 3 * (56 + DIM)))
total=0
for i in $(seq 0 $((N - 1))); do
  out=$WORK/p$i.out err=$WORK/p$i.err
  line=$(grep '^final' "$out") || fail "peer $i printed no final line"
  grep -q '^round [02] group 2 failed 0 parts 2/2' "$out" ||
    fail "peer $i: never in a full region pair: $(grep '^round' "$out")"
  halves=$(grep -c 'half: slice [01] of 10000 values across.*its half adopted' "$err")
  [ "$halves" -ge 1 ] || fail "peer $i never swapped halves: $(grep '^round' "$out"; grep 'half' "$err")"
  while read -r across; do
    awk -v a="$across" -v w="$whole" 'BEGIN { exit !(a > 0.45 * w && a < 0.55 * w) }' ||
      fail "peer $i sent $across bytes across with half the vector, the whole costs $whole"
  done < <(grep -o 'across (sent [0-9]*' "$err" | awk '{ print $3 }')
  got=$(echo "$line" | awk '{ print $7 }')
  mean=$(echo "$line" | awk '{ print $5 }')
  w=$(echo "$line" | awk '{ print $3 }')
  close_to "$got" "$want" 1e-5 || fail "peer $i holds $got at element 0, the average is $want"
  close_to "$mean" "$want_mean" 1e-5 || fail "peer $i's mean is $mean, the average's $want_mean"
  total=$(awk -v a="$total" -v b="$w" 'BEGIN { printf "%.12g", a + b }')
  echo "peer $i: $halves cross-region rounds by halves, $(grep -o 'across (sent [0-9]*' "$err" | awk '{ print $3 }' | tr '\n' ' ')bytes across (whole: $whole)"
done
close_to "$total" "$wsum" 1e-9 || fail "weights sum to $total, not $wsum"
echo "OK: 8 peers in 4 regions, halves across: the exact average $want (weights sum $total)"
