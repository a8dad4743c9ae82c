#!/usr/bin/env bash
# loopback.sh TERN: `tern pipe` on this machine. A plan from `tern plan -o` of two-regions.json
# (4 stages, 8 micro-batches, links of 0 ms, since loopback adds no latency) runs as 4 processes
# under 1F1B and GPipe; the report must carry its fields, the measured iteration time must be
# at least 0.8 x the prediction (a stage that skipped its sleep falls far below), and at most
# 1.3 x once divided by a reference's measured / predicted: the same job cut to one micro-batch,
# run at the same time (a schedule that serialised the pipeline takes about 2.8 x here, the
# reference the same as ever). The reference takes the load: on a loaded 2-core machine a stage
# wakes late from its sleeps and receives, by as much in both runs per step on their critical
# paths, which stretched the job alone to 1.5 x and more (docs/PIPE.md). The reference's timed
# iterations span the job's (its warm-up is shorter), so a burst that stretches the job
# stretches the reference as well; one that stretches only the reference can only pass. Bad
# input is refused by name: a missing job names the jobs there are, a missing or out-of-range
# field is named, and a directory is refused. A stage killed mid-run ends the run with the lost
# peer named. About 15 s.
set -u
tern=$1
fail() { echo "loopback.sh: $*"; exit 1; }
quick() { timeout 5 "$@"; } # a refusal comes at once; 5 s is the margin for a loaded machine
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

quick "$tern" plan "$(dirname "$0")/two-regions.json" -o "$dir/plan.json" >/dev/null 2>&1 ||
  fail "tern plan failed"

help=$("$tern" pipe --help) || fail "--help failed"
for o in --job --time-scale --bytes-scale --iterations --schedule; do
  echo "$help" | grep -q -- "$o" || fail "--help does not name $o"
done

err=$(quick "$tern" pipe "$dir/plan.json" --job nope 2>&1) && fail "a missing job was accepted"
echo "$err" | grep -q "no job 'nope'; the jobs here are 'big'" || fail "missing job: $err"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
plan = json.load(open(d + "/plan.json"))
del plan["jobs"][0]["pipeline"]["stages"][1]["bwd_s"]
json.dump(plan, open(d + "/nobwd.json", "w"))
plan = json.load(open(d + "/plan.json"))
plan["jobs"][0]["pipeline"]["hops"][0]["latency_s"] = 1e3
json.dump(plan, open(d + "/far.json", "w"))
plan = json.load(open(d + "/plan.json"))
del plan["jobs"][0]["pipeline"]
json.dump(plan, open(d + "/nopipe.json", "w"))
PY
err=$(quick "$tern" pipe "$dir/nobwd.json" --job big 2>&1) && fail "a missing field was accepted"
echo "$err" | grep -q "jobs\[0\].pipeline.stages\[1\].bwd_s: missing" || fail "missing field: $err"
err=$(quick "$tern" pipe "$dir/far.json" --job big 2>&1) && fail "a latency of 1000 s passed"
echo "$err" | grep -q "hops\[0\].latency_s: 1000 is out of range: valid is 0 to 10" ||
  fail "range: $err"
err=$(quick "$tern" pipe "$dir/nopipe.json" --job big 2>&1) && fail "a plan without pipeline passed"
echo "$err" | grep -q "jobs\[0\].pipeline: missing" || fail "no pipeline: $err"
err=$(quick "$tern" pipe "$dir" --job big 2>&1) && fail "a directory was accepted"
echo "$err" | grep -q "not a regular file (a directory)" || fail "directory: $err"
err=$(quick "$tern" pipe "$dir/plan.json" --job big --time-scale 0 2>&1) && fail "scale 0 accepted"
echo "$err" | grep -q -- "--time-scale '0'" || fail "time scale: $err"

python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
plan = json.load(open(d + "/plan.json"))
plan["jobs"][0]["pipeline"]["microbatches"] = 1
json.dump(plan, open(d + "/one.json", "w"))
PY
run() { # PLAN SCHEDULE ITERATIONS OUT: one run, its report line in OUT
  TERN_TIMEOUT=30 timeout 60 "$tern" pipe "$1" --job big --time-scale 1 --bytes-scale 10 \
    --iterations "$3" --schedule "$2" >"$4" 2>"$4.err" ||
    fail "$2 run of $1 failed: $(tail -5 "$4.err")"
}
field() { # NAME LINE
  local v=${2##* "$1"=}
  echo "${v%% *}"
}
check() { # SCHEDULE ITERATIONS: the job and its one-micro-batch reference at once (that one 10
  # iterations, about as long: its prediction is about 4 / 11 of the job's), then their lines
  run "$dir/plan.json" "$1" "$2" "$dir/job.out" &
  local job=$!
  run "$dir/one.json" "$1" 10 "$dir/one.out" &
  local one=$!
  wait "$job" || exit 1
  wait "$one" || exit 1
  line=$(grep "^pipe job=" "$dir/job.out") || fail "no report line: $(cat "$dir/job.out")"
  ref=$(grep "^pipe job=" "$dir/one.out") || fail "no reference line: $(cat "$dir/one.out")"
  for f in job=big stages=4 microbatches=8 "schedule=$1" time_scale=1 bytes_scale=10 \
    "iterations=$2" predicted_s= measured_s= min_s= max_s= ratio=; do
    echo "$line" | grep -q " $f\|^pipe $f" || fail "report lacks $f: $line"
  done
  ratio=$(field ratio "$line") rref=$(field ratio "$ref")
  rel=$(awk -v r="$ratio" -v q="$rref" 'BEGIN { printf "%.4f", r / q }')
  awk -v r="$ratio" -v q="$rref" -v x="$rel" \
    'BEGIN { exit !(r >= 0.8 && q >= 0.8 && x <= 1.3) }' ||
    fail "$1: measured/predicted $ratio (at least 0.8), the reference's $rref (at least 0.8):" \
      "$rel (at most 1.3): $line"
  echo "$line"
  echo "  reference (1 micro-batch): measured/predicted $rref; the job's over it: $rel"
}
check 1f1b 3
check gpipe 3
# a stage killed mid-run: the others stop at once with an error naming the lost peer, no hang.
# Mid-run: once all 4 stages are up on their 3 communicators (the world and the two lanes, as
# TERN_DEBUG=INFO logs), and a second more. A fixed wait is not enough: on a loaded machine the
# start-up alone can take longer, and a kill then fails the joins instead.
up() { grep -c " of 4 up" "$dir/kill.err"; }
TERN_DEBUG=INFO TERN_TIMEOUT=30 "$tern" pipe "$dir/plan.json" --job big --time-scale 1 \
  --iterations 50 >"$dir/kill.out" 2>"$dir/kill.err" &
launcher=$!
for _ in $(seq 300); do [ "$(up)" -ge 12 ] && break; sleep 0.1; done
[ "$(up)" -ge 12 ] || fail "the stages were not all up within 30 s: $(tail -3 "$dir/kill.err")"
sleep 1
victim=$(pgrep -P "$launcher" | sed -n 3p)
[ -n "$victim" ] || fail "no third stage under the launcher $launcher"
kill -9 "$victim"
start=$(date +%s)
wait "$launcher" && fail "a run with a killed stage exited 0"
[ $(($(date +%s) - start)) -le 15 ] || fail "the run took more than 15 s to end after the kill"
grep -q "killed by signal 9" "$dir/kill.err" ||
  fail "the kill is not reported: $(cat "$dir/kill.err")"
grep -q "tern pipe: stage [0-9]*: receive: TERN_ERR_PEER_LOST" "$dir/kill.err" ||
  fail "no stage names the lost peer: $(cat "$dir/kill.err")"
echo "PASS: tern pipe refuses bad plans by name, runs a plan within its prediction, fails on a kill"
