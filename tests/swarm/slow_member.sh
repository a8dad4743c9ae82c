#!/usr/bin/env bash
# slow_member.sh TERN: two peers on one line, weights 1 and 3, average in one group of 2. The
# reducer of a's part decides with b in S and sends b its result only after b's whole wait for
# it ran out (TERN_SWARM_FAULT=late-results on a, a failpoint in butterfly.c that sleeps there):
# b, a living member whose result did not come and with no other member to ask, must ask the
# reducer itself, which holds its decision (repair.c). After round 0 both hold weight 2 and the
# same vector (the same error to a reference, printed to 6 digits). Without the ask b keeps its
# own values and weight for a's part, which a's average already counts (weight 2.5 against a's
# 2: 4.5 of 4), and the test fails. A second round keeps a there to be asked.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "slow-$$" --rounds 2 --dim 3000 --target-group 2 --min-group 2
        --match-timeout 5 --timeout 2 --peers 2)
TERN_SWARM_FAULT=late-results start_peer a --listen 127.0.0.1:0 "${common[@]}" --init-peer 0 \
  --weight 1
A=$(addr_of a)
start_peer b --listen 127.0.0.1:0 --join "$A" "${common[@]}" --init-peer 1 --weight 3
for p in a b; do wait "$(eval echo \$PID_$p)" || fail "peer $p exited with an error"; done
# "round 0 group 2 failed F ... weight W0 -> W ... relerr E": W and E must agree
after() { awk '/^round 0 group 2 / { for (i = 1; i <= NF; i++) if ($i == "->") w = $(i + 1); print w, $NF }' "$WORK/$1.out"; }
ra=$(after a) rb=$(after b)
[ -n "$ra" ] && [ "$ra" = "$rb" ] || fail "after round 0 the peers differ (weight, error): a: $ra; b: $rb"
[ "${ra%% *}" = 2 ] || fail "after round 0 both hold weight ${ra%% *}, not 2"
grep -q "its reducer .* sent it when asked" "$WORK/b.err" || fail "b did not ask the reducer: the fault did not bite"
echo "OK: a's results came after b's wait; b asked a and both hold weight, error $ra"
