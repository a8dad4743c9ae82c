#!/usr/bin/env bash
# reducer_dies.sh TERN: three peers average in one group, weights 1, 2, 3. The third dies as a
# reducer at the worst moment of round 0: right after sending its averaged part back to one
# member and before the other (TERN_SWARM_FAULT=exit-mid-results, a failpoint in butterfly.c that
# _exits the process there). The member left without the result must take it from the one that
# got it (repair.c): after round 0 both survivors hold the same vector (the same error to a
# reference, printed to 6 digits) and the same weight. Without the repair the second keeps its own
# values for that part, which the first's average already counts, and the test fails. The
# survivors run a second round so that the one who got the result is still there to be asked.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "reducer-$$" --rounds 2 --dim 3000 --target-group 3 --min-group 2
        --match-timeout 5 --timeout 4 --peers 3)
start_peer a --listen 127.0.0.1:0 "${common[@]}" --init-peer 0 --weight 1
A=$(addr_of a)
start_peer b --listen 127.0.0.1:0 --join "$A" "${common[@]}" --init-peer 1 --weight 2
TERN_SWARM_FAULT=exit-mid-results start_peer v --listen 127.0.0.1:0 --join "$A" "${common[@]}" \
  --init-peer 2 --weight 3
code=0
wait "$PID_v" || code=$?
[ "$code" -eq 9 ] || fail "the victim exited with $code, not the failpoint's 9: the fault did not fire"
for p in a b; do wait "$(eval echo \$PID_$p)" || fail "survivor $p exited with an error"; done
# "round 0 group 3 failed F ... parts P/3 weight 1 -> W ... relerr E": W and E must agree
after() { awk '/^round 0 group 3 / { for (i = 1; i <= NF; i++) if ($i == "->") w = $(i + 1); print w, $NF }' "$WORK/$1.out"; }
ra=$(after a) rb=$(after b)
[ -n "$ra" ] && [ "$ra" = "$rb" ] ||
  fail "after round 0 the survivors differ (weight, error): a: $ra; b: $rb"
grep -q '^round 0 group 3 failed 1 ' "$WORK/a.out" "$WORK/b.out" || fail "nobody named the dead reducer"
grep -q "took its result from" "$WORK/a.err" "$WORK/b.err" || fail "no survivor repaired the part"
grep -h "took its result" "$WORK/a.err" "$WORK/b.err"
echo "OK: the reducer died mid-results; after round 0 both survivors hold weight, error $ra"
