#!/usr/bin/env bash
# gossip.sh TERN: randomized pairwise gossip as a protocol: 8 peers (cells 0-7, --coord k), and
# each round a permutation drawn from the run and the round, the same on every peer, deals them
# into 4 pairs (--random-groups 4 --target-group 2). Peers start from --init-peer vectors (each
# element hashed, so no pairing averages out by symmetry). After 12 rounds: every peer was in a
# pair every round, the sum of the vectors is conserved (the sum of their means, to 1e-6: nothing
# counted twice or lost), and the peers' mean relative error to the global average has fallen at
# least tenfold (random perfect matchings shrink the squared error by about 0.43 a round, so
# about 0.66^12 = 1/150 is expected).
source "$(dirname "$0")/lib.sh" "$1"
N=8 ROUNDS=12
common=(--run-id "gossip-$$" --rounds $ROUNDS --dim 700 --random-groups 4 --target-group 2
        --min-group 2 --match-timeout 4 --timeout 4 --peers $N --show 1)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --init-peer 0 --coord 0
A=$(addr_of p0)
for k in $(seq 1 $((N - 1))); do
  start_peer "p$k" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --init-peer "$k" --coord "$k"
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
for k in $(seq 0 $((N - 1))); do
  [ "$(grep -c '^round .* group 2 failed 0 parts 2/2 ' "$WORK/p$k.out")" -eq $ROUNDS ] ||
    fail "p$k was not in a pair in each of the $ROUNDS rounds"
done
# "start at T relerr E mean M" and "final weight W mean M ...", one of each per peer
sums=$(cat "$WORK"/p*.out | awk '/^start at/ { s0 += $7; e0 += $5; n++ } /^final/ { s1 += $5 }
  /^round/ { e[FILENAME] = $NF } END { printf "%.9g %.9g %.6g", s0, s1, e0 / n }')
read -r s0 s1 err0 <<<"$sums"
close_to "$s1" "$s0" 1e-6 || fail "the peers' means summed to $s0 and now to $s1: gossip lost or doubled weight"
errors=$(for f in "$WORK"/p*.out; do grep '^round ' "$f" | tail -1 | awk '{ print $NF }'; done)
err1=$(echo "$errors" | awk '{ s += $1 } END { printf "%.4g", s / NR }')
awk -v a="$err0" -v b="$err1" 'BEGIN { exit !(b <= a / 10) }' ||
  fail "mean error $err0 -> $err1 after $ROUNDS rounds of gossip: not tenfold"
echo "OK: gossip, $N peers in pairs for $ROUNDS rounds, sum of means $s0 -> $s1, mean error $err0 -> $err1"
