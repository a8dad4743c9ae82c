#!/usr/bin/env bash
# cli.sh TERN: `tern plan` and `tern sim plan` on bad input and on a scenario one policy cannot
# run. Each case must end within a second (timeout 5 is the margin for a loaded machine): a
# directory and a FIFO are refused by what they are, never read or waited on; a number out of
# its physical range is refused naming the file, line, field and range; `--compare` reports the
# policy that cannot place a job and runs the others; `tern plan` writes only where asked, its
# JSON replays the prediction; --help names every option.
set -u
tern=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "cli.sh: $*"; exit 1; }
quick() { timeout 5 "$@"; }

# a scenario whose job (24 GiB of state a layer-pair) fits only across the two regions
cat > "$dir/split.json" <<'JSON'
{"gpu_types": {"slow": {"peak_tflops": 100, "power_w": 250, "memory_gb": 8}},
 "regions": [{"name": "A", "gpu": "slow", "gpus": 2, "price_usd_per_kwh": 0.1, "intra_bandwidth_gbps": 100},
             {"name": "B", "gpu": "slow", "gpus": 2, "price_usd_per_kwh": 0.2, "intra_bandwidth_gbps": 100}],
 "links": [{"a": "A", "b": "B", "latency_ms": 10, "bandwidth_gbps": 10}],
 "jobs": [{"name": "big", "params_b": 1.2, "layers": 12, "hidden": 1024, "seq_len": 1024,
           "microbatch_sequences": 2, "microbatches": 8, "tokens": 1.6e7, "arrival_s": 0, "dtype_bytes": 2}],
 "assumptions": {"mfu": 0.5, "pue": 1.0, "memory_usable_fraction": 1.0}}
JSON
out=$(quick "$tern" sim plan "$dir/split.json" --compare 2>&1) || fail "--compare stopped: $out"
for p in ours bace lcf ldf cr-lcf cr-ldf; do # every policy places it across the two regions
  echo "$out" | grep -qE "^$p " || fail "$p did not run: $out"
done
# a third region joined to neither by a link: a job there too big for it can go nowhere, and
# every policy says so, each in its own line, while --compare goes on to the next
sed -e 's/"jobs": \[{"name": "big"/"jobs": [{"name": "small", "params_b": 0.1, "layers": 12, "hidden": 1024, "seq_len": 1024, "microbatch_sequences": 2, "microbatches": 8, "tokens": 1.6e7, "arrival_s": 0, "dtype_bytes": 2}, {"name": "big"/' \
  -e 's/"links": \[.*\]/"links": []/' "$dir/split.json" > "$dir/nolink.json"
out=$(quick "$tern" sim plan "$dir/nolink.json" --compare 2>&1)
[ $? -eq 124 ] && fail "--compare hung without links"
echo "$out" | grep -q "not run: lcf: policy 'lcf' cannot place job 'big'" || fail "lcf not reported: $out"
echo "$out" | grep -q "not run: bace: policy 'bace' cannot place job 'big'" || fail "bace not reported: $out"

err=$(quick "$tern" sim plan "$dir" 2>&1) && fail "a directory was accepted"
echo "$err" | grep -q "not a regular file (a directory)" || fail "directory: $err"
mkfifo "$dir/fifo.json"
err=$(quick "$tern" plan "$dir/fifo.json" -o - 2>&1)
[ $? -eq 124 ] && fail "a FIFO blocked"
echo "$err" | grep -q "not a regular file (a FIFO)" || fail "FIFO: $err"

sed 's/"latency_ms": 10/"latency_ms": 1e300/' "$dir/split.json" > "$dir/lat.json"
err=$(quick "$tern" sim plan "$dir/lat.json" 2>&1) && fail "latency 1e300 was accepted"
echo "$err" | grep -q "lat.json:4: links\[0\].latency_ms: 1e+300 is out of range: valid is 0 to 10000 ms" ||
  fail "latency: $err"
sed 's/"bandwidth_gbps": 10/"bandwidth_gbps": -1/' "$dir/split.json" > "$dir/neg.json"
err=$(quick "$tern" sim plan "$dir/neg.json" 2>&1) && fail "a negative bandwidth was accepted"
echo "$err" | grep -q "valid is 0.001 to 100000 Gbit/s" || fail "bandwidth: $err"
echo "$err" | grep -q "> 00" && fail "garbled range: $err"
# tern plan writes only where asked: nothing into the working directory without -o; with -o -
# the plan JSON on stdout, whose pipeline figures give back the predicted iteration time
mkdir "$dir/cwd"
(cd "$dir/cwd" && quick "$tern" plan "$dir/split.json" >/dev/null) || fail "tern plan failed"
[ -z "$(ls -A "$dir/cwd")" ] || fail "tern plan wrote into the working directory: $(ls "$dir/cwd")"
quick "$tern" plan "$dir/split.json" --policy cr-lcf -o - 2>/dev/null >"$dir/plan.json" || fail "-o - failed"
python3 - "$dir/plan.json" <<'PY' || fail "the plan JSON does not hold its pipeline"
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
p = job["pipeline"]
assert len(p["stages"]) == job["placement"]["stages"] == len(p["hops"]) + 1
assert all(s["bwd_s"] == 2 * s["fwd_s"] > 0 for s in p["stages"])
cross = [h for h in p["hops"] if h["latency_s"] > 0]
assert len(cross) == 1 and abs(cross[0]["latency_s"] - 0.01) < 1e-12
assert abs(cross[0]["bandwidth_Bps"] - 10e9 / 8) < 1
assert abs(p["iteration_s"] - job["predicted"]["iteration_s"]) < 1e-9 * p["iteration_s"]
PY
# --help names every option each command takes
help=$("$tern" plan --help)
for o in --policy -o --bandwidth --gpus --jobs --seed --hourly --microbatches --random --regions \
  --links --repeat; do
  echo "$help" | grep -q -- "$o" || fail "tern plan --help does not name $o"
done
help=$("$tern" sim plan --help)
for o in --policy --json --gantt --compare --markdown --csv --gantt-dir --list; do
  echo "$help" | grep -q -- "$o" || fail "tern sim plan --help does not name $o"
done
echo "cli.sh: every case refused or run as it should"
