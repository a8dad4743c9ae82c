#!/usr/bin/env bash
# speed.sh TERN: every policy plans a whole workload of 1,000 jobs arriving on 50 regions
# (tern plan gen --random, seed 1) in under a second of CPU on the 2-core machine: the sum of its
# planning rounds' thread CPU time over the simulated run (plan_ms of tern sim plan --compare
# --csv). There ours (a portfolio, its rivals' runs counted) takes about 0.7 s and its five
# rivals (bace, lcf, ldf, cr-lcf, cr-ldf) about 0.17 s together (docs/PLANNING.md).
# A shared cache and core stretch even a thread's own CPU time: beside other engineers' builds
# ours took up to 1.17 s, and the rivals as much more. So the bound is held against the same
# run's rivals: every policy's time at most RATIO (6) x theirs, 1 s where they take 0.17 s, the
# least ratio over up to RUNS runs (another run only while one is over). A planner slower than
# that fails every run; and none may take ABSOLUTE_MS (3 s) or more, however slow its rivals.
# RATIO and ABSOLUTE_MS can be set, to see the test fail.
set -u
tern=$1
RUNS=3
ratio=${RATIO:-6}
absolute=${ABSOLUTE_MS:-3000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tern" plan gen --random --regions 50 --jobs 1000 --seed 1 -o "$dir/r50.json" ||
  { echo "speed.sh: gen failed"; exit 1; }
: >"$dir/all"
for run in $(seq "$RUNS"); do
  "$tern" sim plan "$dir/r50.json" --compare --csv >"$dir/out.csv" ||
    { echo "speed.sh: run $run failed"; exit 1; }
  # "policy ms ratio" per policy of this run, the ratio to the rivals' ms together
  awk -F, 'NR > 1 { p[NR] = $1; ms[NR] = $7; n = NR }
    $1 ~ /^(bace|lcf|ldf|cr-lcf|cr-ldf)$/ { rivals += $7; k++ }
    END { if (k != 5 || rivals <= 0) exit 1
          for (i = 2; i <= n; i++) printf "%s %.1f %.3f\n", p[i], ms[i], ms[i] / rivals }' \
    "$dir/out.csv" >>"$dir/all" || { echo "speed.sh: run $run lacks the five rivals"; exit 1; }
  # each policy's least ms and least ratio over the runs so far, in the order of the first run
  awk '!($1 in ms) { order[n++] = $1; ms[$1] = $2; r[$1] = $3 }
    $2 < ms[$1] { ms[$1] = $2 } $3 < r[$1] { r[$1] = $3 }
    END { for (i = 0; i < n; i++) print order[i], ms[order[i]], r[order[i]] }' \
    "$dir/all" >"$dir/least"
  over=$(awk -v x="$ratio" -v a="$absolute" '$3 > x || $2 >= a { printf " %s %.1f ms (%.2f x)", $1, $2, $3 }' \
    "$dir/least")
  [ -z "$over" ] && break
  echo "speed.sh: after run $run, over $ratio x the rivals or $absolute ms:$over"
done
awk -v runs="$run" -v x="$ratio" -v a="$absolute" '
  { printf "speed.sh: %-12s %7.1f ms, %5.2f x the rivals (least of %d runs)\n", $1, $2, $3, runs
    n++; if ($3 > x || $2 >= a) slow++ }
  END { if (n < 11) { print "speed.sh: only " n " policies ran"; exit 1 }
        if (slow) { print "speed.sh: " slow " policies over " x " x the rivals or " a " ms in every run"; exit 1 } }' \
  "$dir/least"
