#!/usr/bin/env bash
# two_leaders.sh TERN: two leaders on one cross-region line, and the higher one yields. Four
# peers, each alone in its region (--region r0..r3, --grid 2,4): every odd round is one line of
# all four. The peer with the lowest id, L, is SIGSTOPped once it has reported round 2, and let
# go (SIGCONT) only once the next lowest, B, has ended its reading of round 3 without it: B
# leads, its group open to the line's size for a settling time. L then sees all four records
# and, the lowest id, leads too (the others, if still reading, follow L or B). That
# split the fair WAN benchmark's survivors into two pairs for the rest of a run (docs/SWARM.md,
# "Two leaders on one line"): here the higher leader, asked by L whether it is still in the
# round, must yield, send its members on to L and follow it, so that round 3 is one group of 4
# at every peer, and the four end equal, each holding a weight of exactly 1 (1e-9).
source "$(dirname "$0")/lib.sh" "$1"
N=4
for i in $(seq 0 $((N - 1))); do
  TERN_DEBUG=INFO start_joined "p$i" "$i" --run-id "twoleaders-$$" --region "r$i" --grid 2,4 \
    --dim 4000 --value "$(grid_value "$i")" --weight 1 --rounds 6 --bandwidth 1e8 \
    --target-group 4 --match-timeout 20 --timeout 4 --compute 0.3
done
ids=""
for i in $(seq 0 $((N - 1))); do
  addr_of "p$i" >/dev/null
  ids+="$(awk '/^peer .* listening on/ { print $2; exit }' "$WORK/p$i.out") p$i"$'\n'
done
low=$(echo -n "$ids" | sort | sed -n 1p | awk '{ print $2 }')
next=$(echo -n "$ids" | sort | sed -n 2p | awk '{ print $2 }')
for _ in $(seq 3000); do
  grep -q '^round 2 ' "$WORK/$low.out" && break
  sleep 0.01
done
grep -q '^round 2 ' "$WORK/$low.out" || fail "$low never reported round 2"
kill -STOP "$(eval echo \$PID_$low)"
read_done='round 3: [0-9]* ([0-9]* expected) on the key after'
for _ in $(seq 3000); do
  grep -q "$read_done" "$WORK/$next.err" && break
  sleep 0.01
done
kill -CONT "$(eval echo \$PID_$low)"
grep -q "$read_done" "$WORK/$next.err" || fail "$next never ended its reading of round 3"
for i in $(seq 0 $((N - 1))); do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
first="" total=0
for i in $(seq 0 $((N - 1))); do
  out=$WORK/p$i.out
  grep -q '^round 3 group 4 failed 0 ' "$out" ||
    fail "p$i was not in one group of 4 in round 3 ($low stopped): $(grep '^round 3 ' "$out")"
  line=$(grep '^final' "$out") || fail "p$i printed no final line"
  v=$(echo "$line" | awk '{ print $5 }')
  [ -z "$first" ] && first=$v
  close_to "$v" "$first" 1e-6 || fail "p$i ends at mean $v, p0 at $first"
  total=$(awk -v a="$total" -v b="$(echo "$line" | awk '{ print $3 }')" 'BEGIN { printf "%.12g", a + b }')
done
close_to "$total" 4 1e-9 || fail "the weights sum to $total, not 4"
grep -q 'leads this line too, with a lower id' "$WORK"/p*.err ||
  fail "round 3 formed without a leader yielding: the two leaders were not made"
echo "OK: $low came late to round 3's line and led; the other leader yielded; one group of 4"
