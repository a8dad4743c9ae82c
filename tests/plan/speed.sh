#!/usr/bin/env bash
# speed.sh TERN: every policy plans a whole workload of 1,000 jobs arriving on 50 regions
# (tern plan gen --random, seed 1) in under a second of CPU: the sum of its planning rounds'
# thread CPU time over the simulated run (plan_ms of tern sim plan --compare --csv). Measured
# on a 2-core machine: ours (a portfolio, its rivals' runs counted) about 0.7 s, the others
# under 0.6 s (docs/PLANNING.md).
# The simulated run does the same work every time, so its CPU time varies only with what shares
# the cores (a shared cache and core stretch even a thread's own CPU time, never shrink it): a
# policy's time is the least of up to RUNS runs, and another run is made only while some
# policy's least is still 1 s or more. A planner that needs more than a second fails every run.
# LIMIT_MS (default 1000) sets the bound, to see the test fail.
set -u
tern=$1
RUNS=3
limit=${LIMIT_MS:-1000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tern" plan gen --random --regions 50 --jobs 1000 --seed 1 -o "$dir/r50.json" ||
  { echo "speed.sh: gen failed"; exit 1; }
: >"$dir/all"
for run in $(seq "$RUNS"); do
  "$tern" sim plan "$dir/r50.json" --compare --csv >"$dir/out.csv" ||
    { echo "speed.sh: run $run failed"; exit 1; }
  awk -F, 'NR > 1 { print $1, $7 }' "$dir/out.csv" >>"$dir/all"
  # the least plan_ms of each policy over the runs so far, in the order of the first run
  awk '!($1 in least) { order[n++] = $1; least[$1] = $2 } $2 < least[$1] { least[$1] = $2 }
    END { for (i = 0; i < n; i++) print order[i], least[order[i]] }' "$dir/all" >"$dir/least"
  slow=$(awk -v l="$limit" '$2 >= l { printf " %s %.1f ms", $1, $2 }' "$dir/least")
  [ -z "$slow" ] && break
  echo "speed.sh: after run $run, $limit ms or more:$slow"
done
awk -v runs="$run" -v l="$limit" '
  { printf "speed.sh: %-12s %7.1f ms (least of %d runs)\n", $1, $2, runs; n++; if ($2 >= l) slow++ }
  END { if (n < 11) { print "speed.sh: only " n " policies ran"; exit 1 }
        if (slow) { print "speed.sh: " slow " policies took " l " ms or more in every run"; exit 1 } }' \
  "$dir/least"
