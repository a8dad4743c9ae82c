#!/usr/bin/env bash
# gossip.sh TERN: randomized pairwise gossip as a protocol: 8 peers (cells 0-7, --coord k), and
# each round a permutation drawn from the run and the round, the same on every peer, deals them
# into 4 pairs (--random-groups 4 --target-group 2). Peer k starts at (k + 1)(1 + i mod 7): a mean
# relative L2 error of 0.444 from the global average. After 10 rounds: every peer was in a pair
# every round, the sum of the values is conserved exactly (nothing counted twice or lost), and
# the peers' mean error is below 0.05 (random matchings shrink the squared error by about 0.43 a
# round: 0.444 -> about 0.01 in 10).
source "$(dirname "$0")/lib.sh" "$1"
N=8 ROUNDS=10
common=(--run-id "gossip-$$" --rounds $ROUNDS --dim 700 --random-groups 4 --target-group 2
        --min-group 2 --match-timeout 4 --timeout 4 --peers $N --show 1)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --init-peer 0 --coord 0
A=$(addr_of p0)
for k in $(seq 1 $((N - 1))); do
  start_peer "p$k" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --init-peer "$k" --coord "$k"
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
sum=0
for k in $(seq 0 $((N - 1))); do
  f="$WORK/p$k.out"
  [ "$(grep -c '^round .* group 2 failed 0 parts 2/2 ' "$f")" -eq $ROUNDS ] ||
    fail "p$k was not in a pair in each of the $ROUNDS rounds"
  mean=$(grep '^final' "$f" | awk '{ print $5 }')
  sum=$(awk -v a="$sum" -v b="$mean" 'BEGIN { printf "%.12g", a + b }')
done
# The mean of peer k's vector is (k + 1) * 4 (1 + i mod 7 over 700 values averages 4); over 8
# peers the means sum to 36 * 4.
close_to "$sum" 144 1e-5 || fail "the peers' means sum to $sum, not 144: gossip lost or doubled weight"
errors=$(for f in "$WORK"/p*.out; do grep '^round ' "$f" | tail -1 | awk '{ print $NF }'; done)
mean_err=$(echo "$errors" | awk '{ s += $1 } END { printf "%.4g", s / NR }')
awk -v e="$mean_err" 'BEGIN { exit !(e < 0.05) }' || fail "mean error $mean_err after $ROUNDS rounds of gossip"
echo "OK: gossip, $N peers in pairs for $ROUNDS rounds, sum of means $sum, mean error 0.444 -> $mean_err (" $errors ")"
