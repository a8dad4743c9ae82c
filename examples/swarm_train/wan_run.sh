#!/usr/bin/env bash
# wan_run.sh MODE SECONDS OUT [churn]: the driver of one run of train.py inside tests/wan/wan.sh's
# world (8 peers, two in each of Virginia, Frankfurt, Tokyo and Oregon, AWS links x 0.1):
#   ddp            8 ranks, tern.Comm over the links (ring or whatever tern's selector takes),
#                  the store (wan_store) in peer 0's namespace
#   collaborative  8 swarm peers, tern.swarm.Optimizer(mode="collaborative")
#   diloco         8 swarm peers, tern.swarm.Optimizer(mode="diloco")
# churn: from the training's start (OUT/start, written by peer 0 once every peer is in), every
# KILL_EVERY seconds (default 40) one peer (1, 2, 3, ... never 0) is SIGKILLed, and 5 s later a
# new peer joins in its namespace, loads the swarm's state from peer 0 and trains. ddp churn:
# rank 1 is SIGKILLed KILL_EVERY seconds after the start, once (DDP cannot take a joiner); the
# other ranks stop with tern's error (train.py prints it, peer-K.err).
# The swarm's runs note what `tern swarm status` lists (OUT/status.txt).
# Peer 0 (rank 0) writes the snapshots to OUT; TRAIN_ARGS adds options to every peer.
set -euo pipefail
mode=$1 seconds=$2 out=$3 churn=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
bin=${WAN_BIN:-$here/../../build/tests/wan}
py=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"
t0=$(date +%s.%N)
# SECONDS of training from the start (every peer loaded and in); at most 120 s more to get there
until=$(awk -v t="$t0" -v s="$seconds" 'BEGIN { printf "%.3f", t + s + 120 }')
common=(--mode "$mode" --t0 "$t0" --until "$until" --seconds "$seconds" ${TRAIN_ARGS:-})
pids=()
# waits for the training's start, then KILL_EVERY seconds; false once too close to the end
wait_start() {
  for _ in $(seq 1200); do [ -s "$out/start" ] && break; sleep 0.25; done
  # the training's end, for the joiners (they come after the start)
  until=$(awk -v t="$t0" -v s="$seconds" -v b="$(cat "$out/start")" 'BEGIN { printf "%.3f", t + b + s }')
  sleep "${KILL_EVERY:-40}"
  [ "$(date +%s)" -lt $((${until%.*} - 10)) ]
}
if [ "$mode" = ddp ]; then
  "$WAN" exec 0 "$bin/wan_store" "$WAN_PEERS" $((seconds + 120)) >"$out/store-port" 2>"$out/store.err" &
  for _ in $(seq 50); do [ -s "$out/store-port" ] && break; sleep 0.1; done
  store="$("$WAN" addr 0):$(cat "$out/store-port")"
  for k in $(seq 0 $((WAN_PEERS - 1))); do
    snap=(); [ "$k" -ne 0 ] || snap=(--out "$out")
    TERN_RANK=$k TERN_WORLD_SIZE=$WAN_PEERS TERN_STORE=$store \
      "$WAN" exec "$k" "$py" "$here/train.py" "${common[@]}" "${snap[@]}" 2>"$out/peer-$k.err" &
    pids+=($!)
  done
  if [ -n "$churn" ] && wait_start; then
    "$WAN" kill 1
    echo "$(date +%s.%N) killed 1" >>"$out/churn.log"
  fi
else
  boot="$("$WAN" addr 0):7400"
  peer() { # K PORT [--late]
    local k=$1 port=$2; shift 2
    local extra=(--join "$boot"); [ "$k" -ne 0 ] || extra=(--out "$out")
    "$WAN" exec "$k" "$py" "$here/train.py" "${common[@]}" --listen "$("$WAN" addr "$k"):$port" \
      --run-id "swarm-train-$$" --seed "$k$port" --coord "$k" --peers "$WAN_PEERS" "${extra[@]}" "$@" \
      2>>"$out/peer-$k.err" &
    pids+=($!)
  }
  peer 0 7400
  sleep 2
  for k in $(seq 1 $((WAN_PEERS - 1))); do peer "$k" 7400; done
  # what `tern swarm status` lists 30 s and 60 s into the training, read from peer 0's namespace
  (for _ in $(seq 1200); do [ -s "$out/start" ] && break; sleep 0.25; done
   for at in 30 60; do
     sleep 30
     echo "at ${at} s" >>"$out/status.txt"
     "$WAN" exec 0 "${TERN_BIN:-$here/../../build/tern}" swarm status --join "$boot" \
       --run-id "swarm-train-$$" >>"$out/status.txt" 2>&1 || true
   done) &
  if [ -n "$churn" ]; then
    every=${KILL_EVERY:-40} victim=1 port=7401
    wait_start || every=0
    while [ "$every" != 0 ]; do
      "$WAN" kill "$victim"
      echo "$(date +%s.%N) killed $victim" >>"$out/churn.log"
      sleep 5
      peer "$victim" "$port" --late --until "$until"
      echo "$(date +%s.%N) joined $victim" >>"$out/churn.log"
      victim=$((victim % (WAN_PEERS - 1) + 1)) port=$((port + 1))
      sleep "$((every - 5))"
      [ "$(date +%s)" -lt $((${until%.*} - 10)) ] || break
    done
  fi
fi
for p in "${pids[@]}"; do wait "$p" || true; done
echo "$t0" >"$out/t0"
