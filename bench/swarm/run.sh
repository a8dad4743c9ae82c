#!/usr/bin/env bash
# run.sh [COUNT [BW_SCALE]]: issue 6's swarm benchmark in the WAN harness (docs/WAN.md), one run.
# 8 peers in 4 regions (Virginia, Frankfurt, Tokyo, Oregon; peers 0-1 in region 0, 2-3 in 1, ...),
# AWS link figures from tests/wan/aws-10-regions.json, rates x BW_SCALE (default 0.1, the
# harness's default), a vector of COUNT floats (default 16M). Scenarios, all in one world
# (driver.sh; each swarm peer runs `tern swarm --init-peer k --peers 8`, whose vectors have a
# known global average, and reports its relative L2 error to it after every round):
#   ring        tests/wan/wan_allreduce, TERN_ALGO=ring: one warm-up call, a barrier, one timed
#               call (the time to the exact sum, hence the exact average)
#   plain24, fp1624, int824  Moshpit on a 2x4 grid, coordinate (k%2, k/2): round 0 pairs the
#               two peers of a region, round 1 groups one peer of each region; plain, fp16, int8
#   plain       Moshpit on a 2x2x2 grid, coordinate (k%2, k/2%2, k/4)
#   gossip      random pairs each round (--random-groups 4 --target-group 2), BENCH_GOSSIP_ROUNDS
#   kill2       2x2x2 with peers 1, 2, 4, 7 SIGKILLed in rounds 0-3 (1 s after the first
#               survivor began the round): every survivor loses its partners on all axes
#   churn       2x4, 12 rounds; in each of rounds 0-5 one peer is SIGKILLed and restarted at once
#               with --download (the state of a live peer), so 8 peers run at any time
#   ringkill    wan_allreduce --until-error with peer 5 SIGKILLed 10 s into the calls
# BENCH_ONLY="ring grid24" runs only those sections (of ring grid24 grid222 gossip kill2 churn
# ringkill: the scenarios above, in that order), BENCH_ROUNDS_24=R gives the 2x4 runs R rounds
# (default 3; the 8-bit one R + 1), BENCH_OUT=DIR writes to bench/swarm/DIR instead of results.
# Writes bench/swarm/results/ (raw logs, summary.txt, summary.md) and docs/swarm/error_vs_time.png.
# Needs root (network namespaces) and a build in build/ (tern, tests/wan/*).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
count=${1:-16777216}
scale=${2:-0.1}
out="$here/${BENCH_OUT:-results}"
source "$here/ready.sh"
bench_ready run.sh "$root" "$out"
echo "count $count bw_scale $scale started $(date -u +%FT%TZ) host_load $(cut -d' ' -f1-3 /proc/loadavg)" >"$out/params"
rc=0
BENCH_ONLY=${BENCH_ONLY:-} BENCH_ROUNDS_24=${BENCH_ROUNDS_24:-3} "$root/tests/wan/wan.sh" --peers 8 --bw-scale "$scale" --deadline 1500 -- \
  "$here/driver.sh" "$root" "$out" "$count" 2>&1 | tee "$out/driver.log" || rc=$?
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=${PIPESTATUS[0]}
png=$root/docs/swarm/error_vs_time.png
[ -z "${BENCH_OUT:-}" ] || png=$root/docs/swarm/error_vs_time-${BENCH_OUT}.png
/usr/bin/python3 "$here/summarize.py" "$out" "$png" || rc=1
exit "$rc"
