#!/usr/bin/env bash
# bench.sh OUT [REPS] [SECONDS]: the runs of docs/SWARM_TRAINING.md, one command (root, for the
# WAN harness's namespaces). REPS rounds (default 3), each of: DDP, DiLoCo, DiLoCo with the outer
# round overlapped (diloco-ov: a round late; diloco-ov1: one inner step late), collaborative,
# and the four swarm modes with churn (wan_run.sh, 8 peers in 4 regions, SECONDS of training
# from the start, default 120); then one DDP run with a rank killed. Each run's snapshots are
# scored (evaluate.py) while the next run goes, and the load average is noted before and after it
# (OUT/RUN/load). Ends with summarize.py (OUT/summary.txt, OUT/runs.csv, OUT/loss_vs_time.png)
# epoch_times.py (OUT/outer_step.png) and time_split.py (where a step's time goes).
# A run whose curve.csv exists is not run again (an interrupted bench goes on where it stopped);
# RUNS="ddp-3 diloco-3 ..." runs just those, in that order.
# The configurations' options: DDP_ARGS, COLLAB_ARGS, DILOCO_ARGS, DILOCO_OV_ARGS, DILOCO_OV1_ARGS,
# KILL_EVERY (40 s); WAN_ARGS, wan.sh's options (e.g. "--peers 2 --regions Virginia,Tokyo").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$1 reps=${2:-3} seconds=${3:-120}
py=${PYTHON:-/usr/bin/python3}
common="--every 10"
DDP_ARGS=${DDP_ARGS:-"$common"}
COLLAB_ARGS=${COLLAB_ARGS:-"$common --target-batch 64"}
DILOCO_ARGS=${DILOCO_ARGS:-"$common --local-steps 5 --compress fp16"}
# diloco-ov: the same with the outer round behind the next inner steps, landing at the next
# boundary (Optimizer overlap=True); diloco-ov1: landing after one inner step (overlap=1)
DILOCO_OV_ARGS=${DILOCO_OV_ARGS:-"$DILOCO_ARGS --overlap"}
DILOCO_OV1_ARGS=${DILOCO_OV1_ARGS:-"$DILOCO_ARGS --overlap 1"}
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
    --bin "$root/build/tests/wan" --deadline $((seconds + 500)) ${WAN_ARGS:-} -- \
    bash "$here/wan_run.sh" "$mode" "$seconds" "$out/$name" $churn >"$out/$name.log" 2>&1 || true
  echo "after $(cat /proc/loadavg)" >>"$out/$name/load"
  # scored while the next run goes (one process against its eight: under a load of 30-40 from
  # other jobs, scoring in between cost 2-3 minutes a run)
  "$py" "$here/evaluate.py" "$out/$name" &
}

run_named() { # CONFIG-REP
  case $1 in
    ddp-kill-*) run "$1" ddp "$DDP_ARGS" churn ;;
    ddp-*) run "$1" ddp "$DDP_ARGS" ;;
    diloco-ov1-churn-*) run "$1" diloco "$DILOCO_OV1_ARGS" churn ;;
    diloco-ov1-*) run "$1" diloco "$DILOCO_OV1_ARGS" ;;
    diloco-ov-churn-*) run "$1" diloco "$DILOCO_OV_ARGS" churn ;;
    diloco-ov-*) run "$1" diloco "$DILOCO_OV_ARGS" ;;
    diloco-churn-*) run "$1" diloco "$DILOCO_ARGS" churn ;;
    diloco-*) run "$1" diloco "$DILOCO_ARGS" ;;
    collab-churn-*) run "$1" collaborative "$COLLAB_ARGS" churn ;;
    collab-*) run "$1" collaborative "$COLLAB_ARGS" ;;
    *) echo "bench.sh: no configuration for run $1" >&2; exit 2 ;;
  esac
}

if [ -n "${RUNS:-}" ]; then # e.g. RUNS="ddp-3 diloco-3": these runs, in this order
  for name in $RUNS; do run_named "$name"; done
else
  for rep in $(seq "$reps"); do
    for cfg in ddp diloco diloco-ov diloco-ov1 collab diloco-churn diloco-ov-churn \
      diloco-ov1-churn collab-churn; do
      run_named "$cfg-$rep"
    done
  done
  run_named ddp-kill-1
fi
wait
"$py" "$here/summarize.py" "$out" "$out/loss_vs_time.png" "$out/runs.csv" | tee "$out/summary.txt"
"$py" "$here/epoch_times.py" "$out" "$out/outer_step.png" | tee -a "$out/summary.txt"
grep -h "stopped at" "$out"/ddp-kill-1/peer-*.err | tee -a "$out/summary.txt" || true
"$py" "$here/time_split.py" "$out" | tee -a "$out/summary.txt"
