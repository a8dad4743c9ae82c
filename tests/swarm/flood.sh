#!/usr/bin/env bash
# flood.sh TERN FLOOD: four keyed peers average in one group for 6 rounds while FLOOD, a process
# without the key that knows the run id, writes 1000 records under each of the run id's group keys
# and opens 2000 connections to the first peer from 127.0.0.2. The records must change nothing
# (the keyed swarm's DHT network and keys come from the key: it cannot reach them): every peer is
# in a full group each round and ends with the exact average. The connections must flood
# nothing: p0 logs at most 10 refusals a second and sums up the rest (src/swarm/limit.c).
source "$(dirname "$0")/lib.sh" "$1"
FLOOD=$2
# --compute 1.5: the rounds span 7.5 s, so that the flood, started after the peers, meets them.
common=(--run-id "flood-$$" --key "s3cret" --rounds 6 --dim 500 --target-group 4 --min-group 4
        --match-timeout 4 --timeout 3 --compute 1.5)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --value 0
A=$(addr_of p0)
for i in 1 2 3; do start_peer "p$i" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --value $((i * 10)); done
"$FLOOD" "$A" "flood-$$" 6 1000 2000 >"$WORK/flood.out" 2>&1 &
FPID=$!
PIDS+=($FPID)
for i in 0 1 2 3; do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
wait $FPID || fail "the flooder failed: $(cat "$WORK/flood.out")"
made=$(sed -n 's/^flood: 6000 records, \([0-9]*\) of 2000 connections made$/\1/p' "$WORK/flood.out")
[ -n "$made" ] && [ "$made" -ge 1000 ] || fail "the flooder did not flood: $(cat "$WORK/flood.out")"
expect_full 6 4 '^final weight 1 mean .* values 15 16 17 18$' p0 p1 p2 p3
lines=$(wc -l <"$WORK/p0.err")
refused=$(grep -c 'swarm: refused' "$WORK/p0.err")
summed=$(sed -n 's/.*in the last second, \([0-9]*\) more refusals not logged one by one and \([0-9]*\) connections closed unread.*/\1 \2/p' \
  "$WORK/p0.err" | awk '{ s += $1 + $2 } END { print s + 0 }')
echo "p0: $lines log lines, $refused refusals logged, $summed more refused or dropped and summed up"
[ "$lines" -le 120 ] || fail "p0 wrote $lines log lines for $made connections"
[ $((refused + summed)) -ge $((made / 2)) ] || fail "p0 accounts for $((refused + summed)) of $made connections"
grep -q '127.0.0.2: 20 refused connections in a second' "$WORK/p0.err" ||
  fail "p0 did not block 127.0.0.2"
echo "OK: $made keyless connections and 6000 records: full groups, exact average, $lines log lines"
