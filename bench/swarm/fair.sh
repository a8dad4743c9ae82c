#!/usr/bin/env bash
# fair.sh [COUNT [REPS [BW_SCALE]]]: issue 29's fair WAN benchmark, one command. In one
# tests/wan/wan.sh world (docs/WAN.md): 8 peers, two in each of Virginia, Frankfurt, Tokyo and
# Oregon (peers 2r and 2r+1 in region r), the AWS link figures of tests/wan/aws-10-regions.json
# at rates x BW_SCALE (default 0.1), a vector of COUNT floats (default 16M = 64 MiB), REPS
# repetitions (default 3) of: flat ring, region-first ring (hier with the regions as hosts),
# Moshpit 2x2x2, region-aware Moshpit (f32 and int8ef), and each with peers killed (see
# fair_driver.sh). Writes the raw logs to bench/swarm/results-fair/ (FAIR_OUT; gitignored but
# for summary.md, summary.txt, params, links), the summary, and the error-against-time plot into
# that folder; FAIR_PLOT=docs/swarm/fair_error_vs_time.png replaces the docs' figure instead, so
# that a partial or trial run (FAIR_ONLY) never overwrites it unasked.
# Needs root (network namespaces) and a build in build/ (tern, tests/wan/*).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
count=${1:-16777216}
reps=${2:-3}
scale=${3:-0.1}
out="$here/${FAIR_OUT:-results-fair}"
plot=${FAIR_PLOT:-$out/fair_error_vs_time.png}
source "$here/ready.sh"
bench_ready fair.sh "$root" "$out"
echo "count $count bw_scale $scale reps $reps started $(date -u +%FT%TZ) host_load $(cut -d' ' -f1-3 /proc/loadavg)" >"$out/params"
rc=0
"$root/tests/wan/wan.sh" --peers 8 --bw-scale "$scale" --deadline 3000 -- \
  "$here/fair_driver.sh" "$root" "$out" "$count" "$reps" 2>&1 | tee "$out/driver.log" || rc=$?
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=${PIPESTATUS[0]}
/usr/bin/python3 "$here/fair_summary.py" "$out" "$plot" || rc=1
exit "$rc"
