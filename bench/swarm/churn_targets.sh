#!/usr/bin/env bash
# churn_targets.sh TERN [RUNS]: issue 29's matching targets, RUNS times each (default 3), one
# line per run and "k of n" per target at the end. Each run is a test script of tests/swarm or
# bench/swarm with the target's own threshold:
#   kill + stop: 8 peers 2x2x2, one SIGKILL after round 0, one SIGSTOP after round 1, 20
#     rounds: survivors within 2e-3 of their weighted mean, weight conserved to 1e-9;
#   grids not full: 3 peers on 2x2, 5 on 2x2x2, 7 on 3x3, 16 rounds: within 1e-2;
#   pace: 4 peers, 77 KB, a kill at round 9 (bench/swarm/pace.sh: median <= 50 ms, <= 2 slow
#     rounds after the kill, then within 2x the healthy median).
# Runs one at a time (each spawns up to 8 processes); timing-bound, so the machine's load shows.
set -u
TERN=$1 RUNS=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
declare -A ok=()
run() {
  local name=$1
  shift
  local out
  out=$(timeout 180 bash "$@" 2>&1 | grep -E '^(OK|FAIL|healthy)' | tr '\n' ' ')
  echo "$name: $out"
  [[ "$out" == *"OK"* && "$out" != *"FAIL"* ]] && ok[$name]=$((${ok[$name]:-0} + 1))
}
for _ in $(seq "$RUNS"); do
  run kill_stop "$here/../../tests/swarm/grid_churn.sh" "$TERN" 2,2,2 8 20 2e-3 0.1 0 1
  run 3_on_2x2 "$here/../../tests/swarm/grid_churn.sh" "$TERN" 2,2 3 16 1e-2 0
  run 5_on_2x2x2 "$here/../../tests/swarm/grid_churn.sh" "$TERN" 2,2,2 5 16 1e-2 0
  run 7_on_3x3 "$here/../../tests/swarm/grid_churn.sh" "$TERN" 3,3 7 16 1e-2 0
  run pace "$here/pace.sh" "$TERN"
done
for t in kill_stop 3_on_2x2 5_on_2x2x2 7_on_3x3 pace; do echo "$t: ${ok[$t]:-0} of $RUNS"; done
