#!/usr/bin/env bash
# unseen.sh TERN [DIR]: the platforms the learned selector is scored on and never fitted on
# (train.py's HELD), the same cluster of 8-rank hosts with other NICs, every algorithm simulated
# (platform.sh), into DIR (bench/scale/results): 3 GB/s 10 us (the built-in TCP profile's
# bandwidth; sweep_slow_nic.csv, 16 to 256 ranks), 100 GB/s 1 us (unseen_100g_1us.csv) and
# 10 GB/s 50 us (unseen_10g_50us.csv), 16 to 128 ranks. test_select_learned scores the runtime
# selector on them. 256 ranks took 10 minutes of the 2-core machine, under load; 16 to 128,
# seconds to a minute each.
set -euo pipefail
tern=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$here/results}
"$here/platform.sh" "$tern" 3 10 "$dir/sweep_slow_nic.csv" 16 32 64 128 256
"$here/platform.sh" "$tern" 100 1 "$dir/unseen_100g_1us.csv" 16 32 64 128
"$here/platform.sh" "$tern" 10 50 "$dir/unseen_10g_50us.csv" 16 32 64 128
