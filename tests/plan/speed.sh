#!/usr/bin/env bash
# speed.sh TERN: every policy plans a whole workload of 1,000 jobs arriving on 50 regions
# (tern plan gen --random, seed 1) in under a second of CPU: the sum of its planning rounds'
# thread CPU time over the simulated run (plan_ms of tern sim plan --compare --csv). Measured
# on a 2-core machine: ours (a portfolio, its rivals' runs counted) about 0.8 s, the others
# under 0.2 s (docs/PLANNING.md).
set -u
tern=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tern" plan gen --random --regions 50 --jobs 1000 --seed 1 -o "$dir/r50.json" ||
  { echo "speed.sh: gen failed"; exit 1; }
"$tern" sim plan "$dir/r50.json" --compare --csv >"$dir/out.csv" || { echo "speed.sh: run failed"; exit 1; }
awk -F, 'NR > 1 { printf "speed.sh: %-12s %7.1f ms\n", $1, $7; n++; if ($7 >= 1000) slow++ }
  END { if (n < 11) { print "speed.sh: only " n " policies ran"; exit 1 }
        if (slow) { print "speed.sh: " slow " policies took 1 s or more"; exit 1 } }' "$dir/out.csv"
