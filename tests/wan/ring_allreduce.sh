#!/usr/bin/env bash
# ring_allreduce.sh BIN: tern's ring allreduce across the harness's regions (8 ranks, one per
# peer namespace, two per region), started by hand around a store in peer 0's namespace. Every
# result must be exact, and the time per call must follow the model of lib.sh's ring_model
# (latency and bandwidth of each hop, from the links the harness set up) within [LO, HI], once
# where latency dominates (1024 floats) and once where bandwidth does (1M floats, at the rates
# x 0.05 the test asks of wan.sh): a relay that did not delay, or an htb that did not shape,
# would fall far outside.
set -euo pipefail
bin=$1
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
LO=0.9 HI=1.6
small=1024 large=1048576

export TERN_ALGO=ring TERN_TIMEOUT=30
start_store
start_ranks "$small:6" "$large:3"
wait_ranks
for r in $(seq 0 $((WAN_PEERS - 1))); do
  [ "${codes[$r]}" -eq 0 ] || fail "rank $r exited ${codes[$r]}"
  [ "$(grep -c ' wrong 0$' "$WAN_STATE/out-$r")" -eq 2 ] || fail "rank $r: wrong results: $(cat "$WAN_STATE/out-$r")"
done

ok=1
for count in $small $large; do
  # the slowest rank's time per call (they differ only by where each stands in the ring)
  measured=$(awk -v c="$count" '$6 == c && $10 > m { m = $10 } END { print m }' "$WAN_STATE"/out-*)
  read -r model cycle slowest <<<"$(ring_model "$count")"
  ratio=$(awk -v a="$measured" -v b="$model" 'BEGIN { printf "%.3f", a / b }')
  printf "ring allreduce of %8d floats over %d ranks: %.3f s per call, model %.3f s (ring cycle %.3f, slowest link %.3f), ratio %s\n" \
    "$count" "$WAN_PEERS" "$measured" "$model" "$cycle" "$slowest" "$ratio"
  awk -v r="$ratio" -v lo=$LO -v hi=$HI 'BEGIN { exit !(r >= lo && r <= hi) }' ||
    { echo "FAIL: ratio $ratio outside [$LO, $HI]"; ok=0; }
done
[ $ok -eq 1 ] || exit 1
echo "PASS: ring allreduce exact on $WAN_PEERS ranks; times follow the emulated links"
