#!/usr/bin/env bash
# ahead.sh TERN: four peers on one line (--grid 4) with --min-group 4. p0 starts alone, finds
# nobody in round 0 and moves on; only then do the other three start. They see p0's round-0
# record, and p0 is a round or more ahead of them from then on. When p0 does not hold the
# lowest id (3 runs in 4), the lowest of the three leads and waits for p0, which never comes:
# before the fix its group fell short of 4 in every round, and p0's record, seen again each
# round, made the next round fail the same way (swarm.forged_... failed so in CI under ASan,
# where p0 started 2.4 s before the others). Now a leader still short of --min-group asks the
# peers it saw that have not joined whether they closed the round; p0 has, so the three are
# late and jump to p0's round. All four must average in one group of 4 at least once (then
# all hold the exact average). When p0 holds the lowest id the three follow it and were told
# "too late" before the fix too: the test passes either way and says which case it ran.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "ahead-$$" --grid 4 --rounds 8 --dim 100 --min-group 4 --target-group 4
        --match-timeout 4 --timeout 3)
export TERN_DEBUG=INFO
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --coord 0 --value 0
A=$(addr_of p0)
for _ in $(seq 100); do grep -q "alone on its line" "$WORK/p0.err" && break; sleep 0.1; done
grep -q "alone on its line" "$WORK/p0.err" || fail "p0 did not finish round 0's line alone"
for c in 1 2 3; do
  start_peer "p$c" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord "$c" --value $((10 * c))
done
for p in p0 p1 p2 p3; do wait "$(eval echo \$PID_$p)" || fail "$p exited with an error"; done
for p in p0 p1 p2 p3; do
  grep -q '^round .* group 4 failed 0 parts 4/4' "$WORK/$p.out" ||
    fail "$p never averaged in a group of 4"
  grep -q '^final weight 1 mean .* values 15 16 17 18$' "$WORK/$p.out" ||
    fail "$p does not hold the average: $(grep final "$WORK/$p.out")"
done
ids=$(for p in p0 p1 p2 p3; do awk '/^peer/ { print $2; exit }' "$WORK/$p.out"; done)
lowest=$(echo "$ids" | sort | head -1)
first=$(grep -h '^round .* group 4 failed 0 parts 4/4' "$WORK/p1.out" | head -1 | awk '{ print $2 }')
if [ "$lowest" = "$(echo "$ids" | head -1)" ]; then case="p0 held the lowest id (the old path)"
else case="p0 did not hold the lowest id; $(cat "$WORK"/p[123].err | grep -c 'late; on to') jumps"
fi
echo "OK: $case; the four first averaged together in p1's round $first"
