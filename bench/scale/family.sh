#!/usr/bin/env bash
# family.sh TERN [DIR]: the platforms train.py fits on beside sweep.csv's (train.py's TRAIN): the
# same cluster of 8-rank hosts with NICs of 12 GB/s 4 us, 6 GB/s 2 us, 1.5 GB/s 20 us and 25 GB/s
# 20 us, 16 to 128 ranks (platform.sh), into DIR/family_<GB/s>g_<us>us.csv (DIR:
# bench/scale/results). Varied NICs, so that the fit sees the network both faster and slower
# than shared memory; none is a platform the selector is scored on as held out (unseen.sh).
set -euo pipefail
tern=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$here/results}
for nic in "12 4" "6 2" "1.5 20" "25 20"; do
  read -r bw us <<<"$nic"
  "$here/platform.sh" "$tern" "$bw" "$us" "$dir/family_${bw}g_${us}us.csv" 16 32 64 128
done
