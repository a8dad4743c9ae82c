#!/usr/bin/env bash
# run.sh: `tern sim coll` against tern measured across namespace hosts (docs/SCALE.md,
# "Validation across hosts").
#
#   sudo bench/hosts/run.sh [-o FILE]        (default: bench/hosts/results/hosts.md)
#
# Each host is a network namespace with one veth into a bridge (in a hub namespace), shaped by
# tbf both ways (on the host's side and on the hub's) at RATE: a NIC of that rate, full duplex,
# with a burst of 256 KiB. The veths keep TSO: tbf lets a 64 KiB packet through whole on enough
# tokens (0.5 ms of a 1 Gbit link, below the smallest cell's time); sending one MTU a packet
# instead (gso_max_segs 1, as bench/pipe does) made the path CPU-bound on a loaded 2-core
# machine: a 16 MiB exchange at 1 Gbit took 364 ms, 88 ms with TSO (docs/SCALE.md). Ranks are placed in order, RPH per host,
# each in a UTS namespace with its host's hostname (tern knows a host by hostname and boot id:
# shared memory within one, TCP across), launched with torchrun's variables running
# `tern bench` with TERN_ALGO forcing the algorithm.
#
# The simulated platform comes from link facts measured by the same run, never from the cells:
#  - the NIC: 2 hosts x 1 rank exchanging m bytes each way (allgather by ring); bandwidth from the
#    largest two sizes' difference, latency from the smallest exchange less the same exchange
#    over TCP within one host;
#  - each message's CPU cost on each end: that exchange within one host over TCP, as
#    `tern sim coll validate` calibrates (the kernel's copies run on the ranks' cores);
#  - shared memory and reductions: coll_model_shm's figures (tern sim coll's defaults);
#  - cores: every host's ranks share this machine's cores, so each host gets its share of them:
#    nproc / hosts cores, or one core that fast when that is less than one (CPU costs, shared
#    memory and reductions slowed by as much).
# Environment: RATES ("1gbit 4gbit"), LAYOUTS ("2x2 3x2 4x2", hosts x ranks a host), ALGOS
# ("ring rhd hier:ring hier:rhd"), COLLS ("allreduce reduce_scatter allgather"), MIN (256K),
# MAX (4M), REPEAT (4: the least of that many benches, taken round by round), ITERS (8), BUILD
# (build), TERN (the tern to run: $BUILD/tern). About 25 minutes with the defaults.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ALGOS=${ALGOS:-"ring rhd hier:ring hier:rhd"}
MIN=${MIN:-256K} MAX=${MAX:-4M} REPEAT=${REPEAT:-4} ITERS=${ITERS:-8}
PY=/usr/bin/python3
# shellcheck source=bench/hosts/lib.sh
. "$here/lib.sh"
hosts_setup run.sh bhosts hosts.md "$@"

# bench NAME ALGO COLL HOST... : one tern bench job with ALGO forced, rank r on the r-th host
# given ("lo": host 0 over TCP); rank 0's output in $state/NAME.
bench() {
  local name=$1 algo=$2 coll=$3
  shift 3
  JOB_ENV=(TERN_ALGO="$algo")
  job "$name" "$@" -- "$tern" bench "$coll" -b "$MIN" -e "$MAX" -f 4 \
    -n "$ITERS" -w 3 -c 0
}

raw=$state/raw
: >"$raw"
t0=$(date +%s)
for rate in $RATES; do
  shape "$rate"
  for rep in $(seq 1 "$REPEAT"); do
    # link facts: the exchange within one host over TCP, and between two hosts
    MIN=64 MAX=16M bench "lo-$rate-$rep" ring allgather lo lo
    echo "calib lo $rate $rep lo-$rate-$rep" >>"$raw"
    MIN=64 MAX=16M bench "nic-$rate-$rep" ring allgather 0 1
    echo "calib nic $rate $rep nic-$rate-$rep" >>"$raw"
    for layout in $LAYOUTS; do
      H=${layout%x*} K=${layout#*x}
      for coll in $COLLS; do
        for algo in $ALGOS; do
          name="m-$rate-$layout-$coll-${algo/:/-}-$rep"
          # shellcheck disable=SC2046
          bench "$name" "$algo" "$coll" $(hosts_of "$H" "$K")
          echo "cell $rate $layout $coll $algo $rep $name" >>"$raw"
        done
      done
    done
  done
done
t1=$(date +%s)
# the raw outputs stay (gitignored) for table.py to be run again: table.py RAW TERN NPROC SECONDS
keep=$root/bench/out/hosts
rm -rf "$keep"
mkdir -p "$keep" "$(dirname "$out")"
cp "$state"/* "$keep"/
"$PY" "$here/table.py" "$keep/raw" "$tern" "$(nproc)" "$((t1 - t0))" >"$out"
cat "$out"
