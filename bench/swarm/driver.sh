#!/usr/bin/env bash
# driver.sh ROOT OUT COUNT: run.sh's driver, inside tests/wan/wan.sh (WAN, WAN_STATE, WAN_PEERS set).
# Every wait has a deadline: each program runs under timeout(1) in its namespace.
set -euo pipefail
root=$1 out=$2 count=$3
tern=$root/build/tern bin=$root/build/tests/wan
n=$WAN_PEERS
# BENCH_ONLY: the sections to run, of: ring grid24 grid222 gossip kill2 kill24 churn ringkill
only=${BENCH_ONLY:-ring grid24 grid222 gossip kill2 kill24 churn ringkill}
r24=${BENCH_ROUNDS_24:-3}    # rounds of the 2x4 runs (the int8 one does one more)
GOSSIP_ROUNDS=${BENCH_GOSSIP_ROUNDS:-18}
"$WAN" links >"$out/links"

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

section_ring() {
  log "ring: one timed call of $count floats"
  ring ring "$count:1"
  wait_all pids
  kill "$store_pid" 2>/dev/null || true
  grep -h seconds_per_iter "$out"/ring-*.out || log "ring: no timing line"
}

# --timeout: the all-reduce's deadline, half of which is the parts' (a 32 MiB half-vector over the
# slowest link used, Frankfurt-Oregon at 40 Mbit/s x 0.1 scale... see run.sh's header)
opts=(--match-timeout 20 --timeout 60)

# the 2x4 grid: round 0 pairs the peers of a region, round 1 groups one peer of each region
# (exact after 2 rounds; each peer's cross-region traffic is 3 quarters, spread over 3 links)
section_grid24() {
  log "moshpit plain, grid 2x4"
  swarm plain24 7105 "$r24" 2,4 "${opts[@]}" --target-group 4
  wait_all pids
  log "moshpit fp16, grid 2x4"
  swarm fp1624 7107 "$r24" 2,4 "${opts[@]}" --target-group 4 --compress fp16
  wait_all pids
  log "moshpit int8, grid 2x4"
  swarm int824 7106 $((r24 + 1)) 2,4 "${opts[@]}" --target-group 4 --compress int8
  wait_all pids
}

section_grid222() {
  log "moshpit plain, grid 2x2x2"
  swarm plain 7101 4 2,2,2 "${opts[@]}"
  wait_all pids
}

section_gossip() {
  log "gossip: random pairs, $GOSSIP_ROUNDS rounds"
  swarm gossip 7108 "$GOSSIP_ROUNDS" gossip "${opts[@]}"
  wait_all pids
}

# kill2: peers 1, 2, 4, 7 killed in rounds 0-3 of a 2x2x2 run; in rounds 1 and 2 the victim is
# peer 0's partner, and every survivor ends up with no live partner on any axis (the round's
# pool is what lets them average)
section_kill2() {
  log "moshpit kill2: peers 1 2 4 7 killed in rounds 0-3"
  swarm kill2 7104 8 2,2,2 "${opts[@]}"
  kill_in_rounds kill2 1 2 4 7
}

# kill24: the issue's "one of the 8 peers killed in every round", on the 2x4 grid: peers 3, 4,
# 1, 6 in rounds 0-3 (one from each region, each line losing two), 8 rounds
section_kill24() {
  log "moshpit kill24: peers 3 4 1 6 killed in rounds 0-3"
  swarm kill24 7116 8 2,4 "${opts[@]}" --target-group 4
  kill_in_rounds kill24 3 4 1 6
}

# churn: a 2x4 run of 12 rounds; in each of rounds 0-5 one peer (never peer 0, the bootstrap) is
# SIGKILLed 1 s after the first survivor began that round and restarted at once in its region:
# it downloads the state from peer 0 (--download) and runs to the end
section_churn() {
  log "moshpit churn: a peer killed and restarted in each of rounds 0-5"
  swarm churn 7109 12 2,4 "${opts[@]}" --target-group 4
  for r in 0 1 2 3 4 5; do
    v=$(echo 3 5 1 6 2 7 | cut -d' ' -f$((r + 1)))
    wait_round churn "$r"
    sleep 1
    "$WAN" kill "$v"
    echo "round $r killed $v at $(cat "$WAN_STATE/killed-$v")" | tee -a "$out/churn-victims"
    mv "$out/churn-$v.out" "$out/churn-$v-killed$r.out"
    BOOT_PORT=7109 peer_cmd churn "$v" $((7110 + r)) 12 2,4 "${opts[@]}" --target-group 4 --download
    "$WAN" exec "$v" timeout 600 "${PEER[@]}" >"$out/churn-$v.out" 2>"$out/churn-$v-r$r.err" &
    pids+=($!)
  done
  wait_all pids
}

section_ringkill() {
  log "ring with peer 5 killed 10 s into the calls"
  ring ringkill --until-error "$count" 120
  sleep 10
  "$WAN" kill 5
  echo "killed 5 at $(cat "$WAN_STATE/killed-5")" | tee "$out/ringkill-victims"
  wait_all pids
  kill "$store_pid" 2>/dev/null || true
  grep -h 'failed after\|no failure' "$out"/ringkill-*.out || true
}

for s in ring grid24 grid222 gossip kill2 kill24 churn ringkill; do
  if wanted "$s"; then "section_$s"; fi
done
log "done"
