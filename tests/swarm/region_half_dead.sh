#!/usr/bin/env bash
# region_half_dead.sh TERN: 4 peers in 2 regions (--region a, b), f32, unequal values and
# weights, 8 rounds. Each pair carries halves across in round 1 (src/swarm/half.c); then p3 is
# SIGKILLed once it has reported round 1 (in the 0.5 s each peer sleeps between rounds, standing
# in for a training step, so that it dies before round 2). Its partner p2 has no region partner any more, so
# from round 3 on no line carries half the vector: whoever averages across regions sends the
# whole vector. The survivors must finish, hold a total weight of exactly the initial total less
# the victim's last one (its round 1's), and end
# within 1e-2 of each other (nothing was counted twice or lost on the way).
source "$(dirname "$0")/lib.sh" "$1"
DIM=4000
common=(--run-id "halfdead-$$" --grid 2,2 --dim "$DIM" --rounds 8 --bandwidth 1e8
        --target-group 2 --min-group 2 --match-timeout 4 --timeout 2 --compute 0.5)
for i in 0 1 2 3; do
  region=a
  [ "$i" -ge 2 ] && region=b
  TERN_DEBUG=INFO start_joined "p$i" "$i" "${common[@]}" --region "$region" \
    --value "$(grid_value "$i")" --weight "$(grid_weight "$i")"
done
for _ in $(seq 1000); do grep -q '^round 1 ' "$WORK/p3.out" && break; sleep 0.01; done
grep -q '^round 1 ' "$WORK/p3.out" || fail "the victim never reached round 1"
kill -9 "$PID_p3"
for i in 0 1 2; do wait "$(eval echo \$PID_p$i)" || fail "survivor p$i exited with an error"; done
grep -q 'round 1: half: slice .* its half adopted' "$WORK/p3.err" ||
  fail "p3 carried no half in round 1: the test proved nothing"
read -r _ wsum < <(grid_average 4)
victim=$(awk '/^round 1 / { print $12 }' "$WORK/p3.out")
grep -q '^round 2 ' "$WORK/p3.out" && fail "the victim reported round 2: the test proved nothing"
total=0 first=""
for i in 0 1 2; do
  out=$WORK/p$i.out
  line=$(grep '^final' "$out") || fail "p$i printed no final line"
  grep -q 'round [3-7]: half: slice' "$WORK/p$i.err" &&
    fail "p$i carried a half after the victim died: $(grep 'half' "$WORK/p$i.err")"
  # a cross-region round with a group after the kill: the whole vector (one contribution and one
  # result of DIM/2 floats each) went across
  while read -r sent; do
    [ "$sent" -ge $((4 * DIM)) ] || fail "p$i sent $sent bytes across, less than the whole vector"
  done < <(awk '/^round [357] group 2 failed 0/ { print $14 }' "$out")
  v=$(echo "$line" | awk '{ print $7 }')
  [ -z "$first" ] && first=$v
  close_to "$v" "$first" 1e-2 || fail "p$i holds $v, p0 $first: $(grep '^round' "$out")"
  total=$(awk -v a="$total" -v b="$(echo "$line" | awk '{ print $3 }')" 'BEGIN { printf "%.12g", a + b }')
done
want=$(awk -v a="$wsum" -v b="$victim" 'BEGIN { printf "%.12g", a - b }')
close_to "$total" "$want" 1e-9 || fail "the survivors' weights sum to $total, not $wsum - $victim"
echo "OK: p3 killed after carrying a half: survivors averaged whole vectors after, weights sum $total"
