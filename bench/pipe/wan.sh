#!/usr/bin/env bash
# wan.sh: `tern pipe` through the WAN harness (tests/wan/wan.sh), measured against the plan's
# predicted iteration time, for a job planned over 2 and over 3 regions at 0, 50 and 100 ms of
# one-way link latency. Needs root (network namespaces) and a build with tests/wan (make build).
#
#   sudo bench/pipe/wan.sh [-o CSV]        about 3 minutes
#   sudo bench/pipe/wan.sh [-o CSV] --scenario FILE --job NAME
#                                          one job of any scenario, as `tern plan` (POLICY, default
#                                          bace) places it; a peer per stage
#
# For each case it writes a scenario (regions of 2 GPUs each, links of BANDWIDTH_GBPS and the
# latency; the job is as large as 2 or 3 regions' memory), plans it with `tern plan -o`, builds the
# harness's world from the plan (one peer per stage, in the plan's regions in pipeline order;
# link rates x TIME_SCALE / BYTES_SCALE, as tern pipe --help says; the harness takes latency_ms
# as the round trip, so it is given twice the plan's one-way figure) and runs one `tern pipe`
# rank per peer namespace. Environment: TIME_SCALE (default 1), BYTES_SCALE (100), ITERATIONS
# (3), LATENCIES ("0 50 100"), REGION_COUNTS ("2 3"), SCHEDULE (1f1b or gpipe), BANDWIDTH_GBPS
# (of every link, 1), BUILD (build). docs/PIPE.md has the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
tern=$build/tern
T=${TIME_SCALE:-1} B=${BYTES_SCALE:-100} ITER=${ITERATIONS:-3}
SCHED=${SCHEDULE:-1f1b} GBPS=${BANDWIDTH_GBPS:-1}

if [ "${1:-}" = --driver ]; then # inside wan.sh: WAN, WAN_STATE, WAN_PEERS are set
  plan=$2 job=$3
  "$WAN" exec 0 "$build/tests/wan/wan_store" "$WAN_PEERS" 300 >"$WAN_STATE/store-port" \
    2>"$WAN_STATE/err-store" &
  port=""
  for _ in $(seq 50); do
    port=$(cat "$WAN_STATE/store-port")
    [ -z "$port" ] || break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "the store did not start" >&2; exit 1; }
  # One segment per packet out of each peer: with TSO, a message of up to 64 KiB leaves as one
  # packet that htb lets through whole on a positive token count, so a link never holds a
  # message for its bytes / rate (docs/PIPE.md, "Bandwidth").
  for r in $(seq 0 $((WAN_PEERS - 1))); do
    "$WAN" exec "$r" ip link set dev eth0 gso_max_segs 1
  done
  pids=()
  for r in $(seq 0 $((WAN_PEERS - 1))); do
    TERN_RANK=$r TERN_WORLD_SIZE=$WAN_PEERS TERN_STORE="$("$WAN" addr 0):$port" TERN_TIMEOUT=120 \
      "$WAN" exec "$r" "$tern" pipe "$plan" --job "$job" --time-scale "$T" --bytes-scale "$B" \
      --iterations "$ITER" --schedule "$SCHED" >"$WAN_STATE/out-$r" 2>"$WAN_STATE/err-$r" &
    pids+=($!)
  done
  rc=0
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}" || { rc=1; echo "rank $r failed: $(tail -3 "$WAN_STATE/err-$r")" >&2; }
  done
  cat "$WAN_STATE/out-0"
  exit $rc
fi

out=/dev/stdout scenario_file="" job=big
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2 ;;
    --scenario) scenario_file=$2 ;;
    --job) job=$2 ;;
    *) echo "wan.sh: unknown option $1 (see its first comment)" >&2; exit 2 ;;
  esac
  shift 2
done
[ -x "$tern" ] && [ -x "$build/tests/wan/wan_store" ] ||
  { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

scenario() { # REGIONS LATENCY_MS: the scenario, on stdout
  python3 - "$1" "$2" "$GBPS" <<'PY'
import json, sys
n, lat, gbps = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
names = ["A", "B", "C"][:n]
print(json.dumps({
    "gpu_types": {"slow": {"peak_tflops": 100, "power_w": 250, "memory_gb": 8}},
    "regions": [{"name": r, "gpu": "slow", "gpus": 2, "price_usd_per_kwh": 0.1 * (i + 1),
                 "intra_bandwidth_gbps": 100} for i, r in enumerate(names)],
    "links": [{"a": a, "b": b, "latency_ms": lat, "bandwidth_gbps": gbps}
              for i, a in enumerate(names) for b in names[i + 1:]],
    "jobs": [{"name": "big", "params_b": 1.2 if n == 2 else 2.4, "layers": 12, "hidden": 1024,
              "seq_len": 1024, "microbatch_sequences": 2, "microbatches": 8, "tokens": 1.6e7,
              "arrival_s": 0, "dtype_bytes": 2}],
    "assumptions": {"mfu": 0.5, "pue": 1.0, "memory_usable_fraction": 1.0}}))
PY
}

world() { # PLAN SCENARIO JOB: "REGIONS PLACE PEERS INTRA MAX_LATENCY_MS" for wan.sh, and the
  # harness's links file (the harness has one rate inside every region: the slowest region's)
  python3 - "$1" "$2" "$3" "$T" "$B" "$work/links.json" <<'PY'
import json, sys
plan, sc, job, T, B, links = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), \
    sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
j = [j for j in plan["jobs"] if j["name"] == job][0]
segs = j["placement"]["regions"]
regions = [s["region"] for s in segs]
place = [str(i) for i, s in enumerate(segs) for _ in range(s["gpus"])]
json.dump({"regions": regions,
           "links": [{"a": l["a"], "b": l["b"], "latency_ms": 2 * l["latency_ms"],
                      "bandwidth_gbps": l["bandwidth_gbps"] * T / B} for l in sc["links"]
                     if l["a"] in regions and l["b"] in regions]},
          open(links, "w"))
intra = min(r["intra_bandwidth_gbps"] for r in sc["regions"] if r["name"] in regions) * T / B
lat = max([h["latency_s"] * 1e3 for h in j["pipeline"]["hops"]] + [0])
print(",".join(regions), ",".join(place), len(place), intra, f"{lat:g}")
PY
}

run_case() { # SCENARIO POLICY [REGIONS]: plans it, runs $job on the harness (the plan must use
  # REGIONS regions if given), appends a row to $out
  "$tern" plan "$1" --policy "$2" -o "$work/plan.json" >/dev/null 2>&1 ||
    { echo "tern plan $1 --policy $2 failed" >&2; exit 1; }
  read -r regions place peers intra lat <<<"$(world "$work/plan.json" "$1" "$job")"
  local n
  n=$(echo "$regions" | tr , '\n' | wc -l)
  [ -z "${3:-}" ] || [ "$n" -eq "$3" ] ||
    { echo "the plan uses regions $regions, not $3" >&2; exit 1; }
  load=$(cut -d' ' -f1 /proc/loadavg)
  line=$("$root/tests/wan/wan.sh" --regions "$regions" --peers "$peers" --place "$place" \
    --bw-scale 1 --intra-gbit "$intra" --links "$work/links.json" --bin "$build/tests/wan" \
    --deadline 900 -- "$0" --driver "$work/plan.json" "$job" | grep '^pipe ')
  echo "$job on $regions, $lat ms: $line" >&2
  replay=$(python3 "$here/replay.py" "$work/plan.json" "$job" --time-scale "$T" --schedule "$SCHED")
  echo "$job on $regions, $lat ms: event-level replay of the same schedule: $replay s" >&2
  echo "$line" | awk -v gbps="$GBPS" -v n="$n" -v lat="$lat" -v load="$load" -v replay="$replay" '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    printf "%s,%s,%g,%d,%g,%d,%d,%g,%g,%d,%s,%s,%s,%s,%s,%s,%.4f,%s\n", f["job"], f["schedule"],
      gbps, n, lat, f["stages"], f["microbatches"], f["time_scale"], f["bytes_scale"],
      f["iterations"], f["predicted_s"], replay, f["measured_s"], f["min_s"], f["max_s"],
      f["ratio"], f["measured_s"] / replay, load }' >>"$out"
}

header=job,schedule,link_gbps,regions,latency_ms,stages,microbatches,time_scale,bytes_scale
header+=,iterations,predicted_s,replay_s,measured_s,min_s,max_s,ratio,ratio_replay,load1
echo "$header" >"$out"
if [ -n "$scenario_file" ]; then
  GBPS=0 # the scenario's own links
  run_case "$scenario_file" "${POLICY:-bace}"
  exit
fi
for n in ${REGION_COUNTS:-2 3}; do
  for lat in ${LATENCIES:-0 50 100}; do
    scenario "$n" "$lat" >"$work/scenario.json"
    run_case "$work/scenario.json" cr-lcf "$n"
  done
done
