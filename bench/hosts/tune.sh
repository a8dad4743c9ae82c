#!/usr/bin/env bash
# tune.sh: the runtime selector across namespace hosts, fed by a tuning file that `tern tune`
# measured across the same hosts, against the built-in model, on sizes the file never measured
# (docs/SCALE.md, "The runtime selector on namespace hosts").
#
#   sudo bench/hosts/tune.sh [-o FILE]        (default: bench/hosts/results/tune.md)
#
# The hosts are run.sh's (lib.sh: network namespaces on a bridge, tbf both ways at RATE, ranks
# placed in order, each in its host's UTS namespace, torchrun's variables). For each rate and
# layout:
#  1. `tern tune --budget BUDGET --max-bytes TUNE_MAX` launched on the hosts' ranks: its file,
#     its rows and its own held-out scores (sizes between, largest sizes);
#  2. at SIZES, 3 x 2^k bytes (never a size the file measured: those are powers of two), every
#     algorithm the rows have for each collective of COLLS, forced with TERN_ALGO and timed by
#     `tern bench` (the least of REPEAT, taken round by round, as run.sh does);
#  3. the selector's pick at those sizes, from rank 0's TERN_DEBUG=INFO log, with the file
#     (TERN_TUNING) and without (the built-in: the phases of select_hosts.c at 2 ranks a host);
# and tune_table.py scores each pick: right when it measured within 5% of the fastest in 2.
# The rows of a rate's layouts are then fitted together (`tern tune --from`), which scores each
# layout held out in turn: what the runtime picks at a placement the file did not measure.
# Environment: RATES ("1gbit 4gbit"), LAYOUTS ("2x2 3x2 4x2"), COLLS ("allreduce reduce_scatter
# allgather"), BUDGET (60), TUNE_MAX (2M), MIN (24K), MAX (1536K: with MIN, x4 apart, 24, 96, 384
# and 1536 KiB), REPEAT (2), ITERS (8), BUILD (build), TERN ($BUILD/tern). About 10 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUDGET=${BUDGET:-60} TUNE_MAX=${TUNE_MAX:-2M}
MIN=${MIN:-24K} MAX=${MAX:-1536K} REPEAT=${REPEAT:-2} ITERS=${ITERS:-8}
# shellcheck source=bench/hosts/lib.sh
. "$here/lib.sh"
hosts_setup tune.sh thosts tune.md "$@"

raw=$state/raw
: >"$raw"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
for rate in $RATES; do
  shape "$rate"
  for layout in $LAYOUTS; do
    # shellcheck disable=SC2046 # the hosts, one word each
    set -- $(hosts_of "${layout%x*}" "${layout#*x}")
    name=tune-$rate-$layout
    JOB_ENV=()
    job "$name" "$@" -- "$tern" tune --budget "$BUDGET" --max-bytes "$TUNE_MAX" \
      -o "$state/$name.file" --save-rows "$state/$name.rows"
    echo "tune $rate $layout $name" >>"$raw"
    for coll in $COLLS; do
      algos=$(awk -F, -v c="$coll" '$3 == c { print $5 }' "$state/$name.rows" | sort -u)
      for rep in $(seq 1 "$REPEAT"); do
        for algo in $algos; do
          cell="m-$rate-$layout-$coll-${algo/:/-}-$rep"
          JOB_ENV=(TERN_ALGO="$algo")
          job "$cell" "$@" -- "$tern" bench "$coll" -b "$MIN" -e "$MAX" -f 4 -n "$ITERS" -w 3 -c 0
          echo "cell $rate $layout $coll $algo $rep $cell" >>"$raw"
        done
      done
      for with in file builtin; do
        pick="p-$rate-$layout-$coll-$with"
        JOB_ENV=(TERN_DEBUG=INFO)
        [ "$with" = file ] && JOB_ENV+=(TERN_TUNING="$state/$name.file")
        job "$pick" "$@" -- "$tern" bench "$coll" -b "$MIN" -e "$MAX" -f 4 -n 1 -w 0 -c 0
        echo "pick $rate $layout $coll $with $pick.err.0" >>"$raw"
      done
    done
  done
  from=()
  for layout in $LAYOUTS; do from+=(--from "$state/tune-$rate-$layout.rows"); done
  "$tern" tune "${from[@]}" -o "$state/merged-$rate.file" >"$state/merged-$rate"
  echo "merged $rate all merged-$rate" >>"$raw"
done
t1=$(date +%s)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# the raw outputs stay (gitignored) for tune_table.py to be run again
keep=$root/bench/out/hosts-tune
rm -rf "$keep"
mkdir -p "$keep" "$(dirname "$out")"
cp "$state"/* "$keep"/
/usr/bin/python3 "$here/tune_table.py" "$keep/raw" "$((t1 - t0))" "$load0" "$load1" >"$out"
cat "$out"
