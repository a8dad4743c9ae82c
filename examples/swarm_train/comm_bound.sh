#!/usr/bin/env bash
# comm_bound.sh OUT [REPS] [SECONDS]: bench.sh in the regime the issue's target is about, where
# the links, not the cores, set DDP's pace (docs/SWARM_TRAINING.md, "The comm-bound regime"):
# 4 peers, one in each of Virginia, Frankfurt, Tokyo and Oregon (AWS links x BW_SCALE, default
# 0.1, the harness's), lm.py's MLP (WIDTH, default 1024: 2.24 M parameters, 9 MB of float32
# gradients, about 6 x 2.24 M flops per sample) at batch BATCH (default 8) per peer, DDP over
# tern's ring (TERN_ALGO=ring) against DiLoCo with H (default 20) inner steps and fp16
# pseudo-gradients at outer learning rate OUTER_LR (default 0.35, half the DiLoCo paper's 0.7:
# at 0.7 the loss climbs after its best, sooner with fewer peers a round; docs/SWARM_TRAINING.md,
# "Churn: outer states apart"). REPS (default 3) interleaved pairs ddp-N, diloco-N; with CHURN=1
# a diloco-churn-N in each and one ddp-kill-1 at the end (a peer SIGKILLed every KILL_EVERY s,
# default 20, and replaced 5 s later: wan_run.sh). RUNS="...": those runs instead.
# Ends with bench.sh's summary and time_split.py's breakdown.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1 reps=${2:-3} seconds=${3:-120}
model="--model mlp --width ${WIDTH:-1024} --batch ${BATCH:-8} --every 2"
export WAN_ARGS="--peers 4 --regions Virginia,Frankfurt,Tokyo,Oregon --bw-scale ${BW_SCALE:-0.1}"
export TERN_ALGO=ring
export DDP_ARGS="$model" DILOCO_ARGS="$model --local-steps ${H:-20} --compress fp16 --outer-lr ${OUTER_LR:-0.35}"
export TITLE="MLP of ${WIDTH:-1024} (2.24 M parameters at 1024), 4 peers in 4 regions, x ${BW_SCALE:-0.1}"
export KILL_EVERY=${KILL_EVERY:-20}
churn=${CHURN:-0}
runs=""
for rep in $(seq "$reps"); do
  runs="$runs ddp-$rep diloco-$rep"
  [ "$churn" = 0 ] || runs="$runs diloco-churn-$rep"
done
[ "$churn" = 0 ] || runs="$runs ddp-kill-1"
RUNS="${RUNS:-$runs}" exec bash "$here/bench.sh" "$out" "$reps" "$seconds"
