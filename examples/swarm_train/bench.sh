#!/usr/bin/env bash
# bench.sh OUT [REPS] [SECONDS]: the runs of docs/SWARM_TRAINING.md, one command (root, for the
# WAN harness's namespaces). REPS rounds (default 3), each of: DDP, DiLoCo, collaborative, DiLoCo
# with churn, collaborative with churn (wan_run.sh, 8 peers in 4 regions, SECONDS of training
# from the start, default 120); then one DDP run with a rank killed. Each run's snapshots are
# scored (evaluate.py) right after it, and the load average is noted before and after it
# (OUT/RUN/load). Ends with summarize.py: OUT/summary.txt, OUT/runs.csv, OUT/loss_vs_time.png.
# A run whose curve.csv exists is not run again (an interrupted bench goes on where it stopped).
# The configurations' options: DDP_ARGS, COLLAB_ARGS, DILOCO_ARGS (below), KILL_EVERY (40 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$1 reps=${2:-3} seconds=${3:-120}
py=${PYTHON:-/usr/bin/python3}
common="--every 10"
DDP_ARGS=${DDP_ARGS:-"$common"}
COLLAB_ARGS=${COLLAB_ARGS:-"$common --target-batch 64"}
DILOCO_ARGS=${DILOCO_ARGS:-"$common --local-steps 5 --compress fp16"}
# Swarm peers on non-loopback addresses need a key (docs/SWARM.md, "Security"); DDP's
# connections are authenticated with it too.
export TERN_LIBRARY=$root/build/libtern.so PYTHONPATH=$root/python TERN_TIMEOUT=60
export TERN_KEY=${TERN_KEY:-swarm-train-bench}
mkdir -p "$out"

run() { # NAME MODE ARGS [churn]
  local name=$1 mode=$2 args=$3 churn=${4:-}
  [ -s "$out/$name/curve.csv" ] && return 0
  rm -rf "${out:?}/$name"
  mkdir -p "$out/$name"
  echo "before $(cat /proc/loadavg)" >"$out/$name/load"
  TRAIN_ARGS="$args" timeout $((seconds + 600)) bash "$root/tests/wan/wan.sh" \
    --bin "$root/build/tests/wan" --deadline $((seconds + 500)) -- \
    bash "$here/wan_run.sh" "$mode" "$seconds" "$out/$name" $churn >"$out/$name.log" 2>&1 || true
  echo "after $(cat /proc/loadavg)" >>"$out/$name/load"
  "$py" "$here/evaluate.py" "$out/$name"
}

for rep in $(seq "$reps"); do
  run "ddp-$rep" ddp "$DDP_ARGS"
  run "diloco-$rep" diloco "$DILOCO_ARGS"
  run "collab-$rep" collaborative "$COLLAB_ARGS"
  run "diloco-churn-$rep" diloco "$DILOCO_ARGS" churn
  run "collab-churn-$rep" collaborative "$COLLAB_ARGS" churn
done
run ddp-kill-1 ddp "$DDP_ARGS" churn
"$py" "$here/summarize.py" "$out" "$out/loss_vs_time.png" "$out/runs.csv" | tee "$out/summary.txt"
grep -h "stopped at" "$out"/ddp-kill-1/peer-*.err | tee -a "$out/summary.txt" || true
