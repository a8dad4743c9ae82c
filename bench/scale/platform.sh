#!/usr/bin/env bash
# platform.sh TERN NIC_GBPS NIC_US OUT RANKS...: sweep.py's cells on the same cluster of 8-rank
# hosts with other NICs (bandwidth in GB/s, latency in us), every algorithm simulated
# (--steady 4, docs/SCALE.md), for the rank counts given. unseen.sh (held-out platforms) and
# family.sh (the platforms train.py fits on beside sweep.csv) call it.
set -euo pipefail
tern=$1 bw=$2 lat=$3 out=$4
shift 4
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.n"' EXIT
first=1
for n in "$@"; do
  "$tern" sim coll allreduce,reduce_scatter,allgather -n "$n" --rph 8 -b 1K -e 64M -f 4 \
    -a rhd,tree,rd,bruck,hier,ring,direct --nic-bw "$bw" --nic-lat "$lat" --steady 4 --csv \
    --timeout 7200 >"$tmp.n"
  if [ "$first" = 1 ]; then cat "$tmp.n"; else tail -n +2 "$tmp.n"; fi >>"$tmp"
  first=0
done
mv "$tmp" "$out"
