#!/usr/bin/env bash
# join_midrun.sh TERN: two peers run rounds; once they hold their average, a third peer with a
# far-off vector (--value 100) joins with --download: it must take the current vector and round
# from a live peer before its first average (so it starts from 5 6 7 8, not 100 ...), average
# with them, and, leaving cleanly at its end, be reported as gone in the others' logs.
# (--rounds 10: it runs the rounds left of 0..9, about 6.) The first two take a 0.2 s training
# step between rounds (--compute): a pair forms as soon as both are on its line (match.c), so
# without one their 24 rounds ended in half a second, before the third had started.)
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "join-$$" --dim 64 --target-group 3 --min-group 2 --match-timeout 1 --timeout 2
        --compute 0.2)
TERN_DEBUG=INFO start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --rounds 24 --value 0
A=$(addr_of p0)
TERN_DEBUG=INFO start_peer p1 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --rounds 24 --value 10
for _ in $(seq 200); do grep -q '^round 3 ' "$WORK/p0.out" && break; sleep 0.05; done
grep -q '^round 3 .*group 2' "$WORK/p0.out" || fail "p0 and p1 did not average"
start_peer p2 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --rounds 10 --value 100 --download
for i in 0 1 2; do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
grep -q '^downloaded state: v0 5$' "$WORK/p2.out" || fail "p2 did not download the state"
first=$(awk '$1 == "round" { print $2; exit }' "$WORK/p2.out")
[ "$first" -ge 4 ] || fail "p2 started at round $first, not where the swarm was"
grep -q '^round .* group 3 failed 0' "$WORK/p2.out" || fail "p2 never averaged with both"
for i in 0 1 2; do
  grep -q '^final .* values 5 6 7 8$' "$WORK/p$i.out" || fail "p$i: $(grep final "$WORK/p$i.out")"
done
grep -q "peer $(awk '/^peer/ { print $2 }' "$WORK/p2.out") left" "$WORK/p0.err" "$WORK/p1.err" ||
  fail "nobody heard p2 leave"
echo "OK: p2 joined at round $first with the swarm's state and left cleanly"
