#!/usr/bin/env bash
# run.sh: regenerates docs/SCALE.md, the one command: the simulated sweep (sweep.py), four more
# training platforms (family.sh), the platforms the selector is only scored on (unseen.sh), the
# learned selector fitted on the first two (train.py, which rewrites
# src/coll/select_learned_table.c), the validation against this machine (`tern sim coll validate`), then the figures and the page
# (plot.py). Results are kept in bench/scale/results/, so that
#   bench/scale/run.sh --plots
# redraws the page from them alone, in seconds, and
#   bench/scale/run.sh --resume
# takes the rank counts an interrupted sweep finished from its cache (bench/out/scale-sweep/).
# The whole run takes about 40 minutes on this 2-core machine (docs/SCALE.md, "Cost").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
results=$here/results
py=/usr/bin/python3 # Debian's, with numpy and matplotlib (scripts/deps.sh bench)
mkdir -p "$results"

build() {
  cmake -S "$root" -B "$root/build" >/dev/null
  cmake --build "$root/build" -j2 >/dev/null
}

fresh=--fresh
[ "${1:-}" = "--resume" ] && fresh=
if [ "${1:-}" != "--plots" ]; then
  build
  t0=$SECONDS
  "$py" "$here/sweep.py" --tern "$root/build/tern" --out "$results/sweep.csv" $fresh
  t1=$SECONDS
  bash "$here/family.sh" "$root/build/tern" "$results"
  # platforms the weights are not trained on, which train.py and test_select_learned score
  bash "$here/unseen.sh" "$root/build/tern" "$results"
  "$py" "$here/train.py" --results "$results" | tee "$results/train.txt"
  build # the new weights
  t2=$SECONDS
  # Exit 1 means some cell is off by more than 25%: the table says which, and the page shows it.
  "$root/build/tern" sim coll validate -n 2,3,4,6,8 >"$results/validation.md" || true
  t3=$SECONDS
  sens=(allreduce,reduce_scatter,allgather -n 2048 --rph 8 -b 64M -e 64M -a ring,rhd,hier
        --nic-lat 10)
  {
    echo "with 10 us NICs instead of 2 (\`tern sim coll ${sens[*]}\`):"
    echo
    echo '```'
    "$root/build/tern" sim coll "${sens[@]}"
    echo '```'
  } >"$results/sensitivity.md"
  t4=$SECONDS
  "$here/topologies.sh" "$root/build/tern" >"$results/topologies.md"
  t5=$SECONDS
  "$here/pccl_frontier.sh" "$root/build/tern" >"$results/pccl_frontier.md"
  {
    echo "- sweep (sweep.py, 2 processes): $((t1 - t0)) s of wall time"
    echo "- validation (tern sim coll validate, 5 rank counts): $((t3 - t2)) s"
    echo "- the 10 us sensitivity run (2048 ranks, 64 MiB): $((t4 - t3)) s"
    echo "- the topologies (topologies.sh): $((t5 - t4)) s"
    echo "- PCCL's comparison on Frontier's nodes (pccl_frontier.sh): $((SECONDS - t5)) s"
  } >"$results/timings.txt"
fi
"$py" "$here/plot.py" --results "$results" --docs "$root/docs"
echo "run.sh: docs/SCALE.md written"
