#!/usr/bin/env bash
# forged.sh TERN FORGE: four keyed peers average in one group for 6 rounds while FORGE writes
# forged and malformed records under their group keys and sends garbage, strangers' hellos and
# absurd lengths to the first peer's port. Every peer must still be in a full group each round
# and end with the exact average; the first peer must have refused every hostile connection
# (its log names them) and the peers must have ignored forged records.
source "$(dirname "$0")/lib.sh" "$1"
FORGE=$2
# --compute 1.5: the 6 rounds span 7.5 s or more, so that the forger, started after the peers,
# finds them still running (without it the normal build's 6 rounds are over in 0.3 s).
common=(--run-id "forged-$$" --key "s3cret" --rounds 6 --dim 500 --target-group 4 --min-group 4
        --match-timeout 4 --timeout 3 --compute 1.5)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --value 0
A=$(addr_of p0)
# The peers start together, then the forger: started between p0 and the others, under ASan and
# a busy CI its start put p0's first round 2.4 s ahead of theirs, past its matching, and p0
# averaged round 0 alone (not the forger's doing). The forger writes the records of all 6
# rounds at once, so the later rounds read them whatever the first sees.
for i in 1 2 3; do start_peer "p$i" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --value $((i * 10)); done
"$FORGE" "$A" "forged-$$" "s3cret" 6 >"$WORK/forge.out" 2>&1 &
FPID=$!
PIDS+=($FPID)
for i in 0 1 2 3; do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
wait $FPID || fail "the forger failed: $(cat "$WORK/forge.out")"
grep -q "forged records" "$WORK/forge.out" || fail "the forger did nothing"
expect_full 6 4 '^final weight 1 mean .* values 15 16 17 18$' p0 p1 p2 p3
refused=$(grep -c 'swarm: refused' "$WORK/p0.err")
[ "$refused" -ge 7 ] || fail "p0 logged $refused refusals, expected 7 hostile connections"
ignored=$(cat "$WORK"/p*.err | grep -c 'ignored a DHT record\|ignored a .*-byte DHT value')
[ "$ignored" -ge 4 ] || fail "the peers logged $ignored ignored records"
grep -h 'swarm: refused' "$WORK"/p0.err | sed 's/^tern [^ ]* [^ ]* [^ ]* //'
grep -h 'ignored a' "$WORK"/p0.err | sed 's/^.*ignored a/ignored a/' | sort | uniq -c
echo "OK: $refused hostile connections refused, $ignored forged records ignored; the swarm averaged exactly"
