#!/usr/bin/env bash
# unseen.sh TERN [OUT]: the sweep of sweep.py on a platform the learned selector was not trained
# on: the same cluster of 8-rank hosts, its NICs 3 GB/s and 10 us (the built-in TCP profile's
# bandwidth) instead of 25 GB/s and 2 us, 16 to 256 ranks, every algorithm simulated (--steady 4,
# docs/SCALE.md). test_select_learned scores the runtime selector on it
# (results/sweep_slow_nic.csv, the default OUT). 256 ranks took 10 minutes of the 2-core machine,
# under load; 16 to 128, seconds each.
set -euo pipefail
tern=$1
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/results/sweep_slow_nic.csv}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for n in 16 32 64 128 256; do
  "$tern" sim coll allreduce,reduce_scatter,allgather -n "$n" --rph 8 -b 1K -e 64M -f 4 \
    -a rhd,tree,rd,bruck,hier,ring,direct --nic-bw 3 --nic-lat 10 --steady 4 --csv \
    --timeout 7200 >"$tmp.$n"
  if [ "$n" = 16 ]; then cat "$tmp.$n"; else tail -n +2 "$tmp.$n"; fi >>"$tmp"
  rm -f "$tmp.$n"
done
mv "$tmp" "$out"
trap - EXIT
