#!/usr/bin/env bash
# tamper.sh TERN TAMPER: two keyed peers average for 6 rounds while TAMPER replays a sealed
# message on another connection, flips a bit of a tag, changes a sealed header and sends a
# message without its tag to the first (tamper.c). Each must be refused and logged as such,
# none may act (the forged leaves name the first peer's partner): both peers are in a full
# group every round and end with the exact average.
source "$(dirname "$0")/lib.sh" "$1"
TAMPER=$2
common=(--run-id "tamper-$$" --key "s3cret" --rounds 6 --dim 16 --target-group 2 --min-group 2
        --match-timeout 4 --timeout 3 --compute 0.5)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --value 0
A=$(addr_of p0)
start_peer p1 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --value 10
addr_of p1 >/dev/null
P1=$(awk '/^peer .* listening on/ { print $2; exit }' "$WORK/p1.out")
"$TAMPER" "$A" "tamper-$$" "s3cret" "$P1" >"$WORK/tamper.out" 2>&1 || fail "tamper: $(cat "$WORK/tamper.out")"
for i in 0 1; do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
expect_full 6 2 '^final weight 1 mean 7.6875 values 5 6 7 8$' p0 p1
bad=$(grep -c 'swarm: refused .*does not verify (forged, tampered with or replayed)' "$WORK/p0.err")
cut=$(grep -c 'swarm: refused .*closed in the middle of a message' "$WORK/p0.err")
grep 'swarm: refused' "$WORK/p0.err" | sed 's/^tern [^ ]* [^ ]* [^ ]* //'
[ "$bad" -eq 3 ] || fail "p0 refused $bad messages that do not verify, expected 3"
[ "$cut" -eq 1 ] || fail "p0 did not refuse the message without its tag"
echo "OK: 3 forged or replayed messages and 1 unsealed refused; the pair averaged exactly"
