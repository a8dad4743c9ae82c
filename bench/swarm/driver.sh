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

log() { echo "[$(date -u +%T)] $*"; }
wanted() { [[ " $only " == *" $1 "* ]]; }

# waits for every pid in the array named $1
wait_all() {
  local -n ps=$1
  for p in "${ps[@]}"; do wait "$p" 2>/dev/null || true; done
}

start_store() { # $1: tag
  "$WAN" exec 0 timeout 600 "$bin/wan_store" "$n" 500 >"$out/$1-store-port" 2>"$out/$1-store-err" &
  store_pid=$!
  local port=""
  for _ in $(seq 100); do
    port=$(cat "$out/$1-store-port" 2>/dev/null || true)
    [ -z "$port" ] || break
    sleep 0.1
  done
  [ -n "$port" ] || { log "the store did not start"; return 1; }
  STORE="$("$WAN" addr 0):$port"
}

ring() { # tag, then wan_allreduce's arguments
  local tag=$1
  shift
  start_store "$tag"
  pids=()
  for r in $(seq 0 $((n - 1))); do
    TERN_ALGO=ring TERN_TIMEOUT=120 TERN_RANK=$r TERN_WORLD_SIZE=$n TERN_STORE=$STORE \
      "$WAN" exec "$r" timeout 500 "$bin/wan_allreduce" "$@" >"$out/$tag-$r.out" 2>"$out/$tag-$r.err" &
    pids+=($!)
  done
}

# declared_bw k: the bandwidth peer k declares (bytes/s), which sizes its part of a group: what
# it can count on to any other region, its slowest cross-region link as the harness set it up
# ($out/links: "r1 r2 name1 name2 rtt_ms one_way_ms gbps kbit loss" per region pair)
declared_bw() {
  local region
  region=$(awk -v k="$1" 'NF == 4 && $1 == k {print $2}' "$out/links")
  awk -v r="$region" 'NF == 9 && ($1 == r || $2 == r) && (min == "" || $8 < min) {min = $8}
                      END {printf "%.0f\n", min * 1000 / 8}' "$out/links"
}

# peer_cmd tag k port rounds grid [extra tern swarm options]: the command line of swarm peer k.
# grid: 2,2,2 (coordinate (k%2, k/2%2, k/4)), 2,4 ((k%2, k/2)) or gossip (cell k, random pairs)
peer_cmd() {
  local tag=$1 k=$2 port=$3 rounds=$4 grid=$5
  shift 5
  local join=() place=(--grid "$grid" --coord "$((k % 2)),$((k / 2 % 2)),$((k / 4))")
  [ "$k" -eq 0 ] || join=(--join "$("$WAN" addr 0):${BOOT_PORT:-$port}")
  [ "$grid" != 2,4 ] || place=(--grid 2,4 --coord "$((k % 2)),$((k / 2))")
  [ "$grid" != gossip ] || place=(--coord "$k" --random-groups $((n / 2)) --target-group 2)
  PEER=("$tern" swarm --listen "$("$WAN" addr "$k"):$port" "${join[@]}" --run-id "bench-$tag"
        --key "bench-$tag" "${place[@]}" --dim "$count" --init-peer "$k" --peers "$n" --rounds "$rounds" --show 2
        --sketch --bandwidth "$(declared_bw "$k")" "$@")
}

swarm() { # tag port rounds grid, then extra tern swarm options
  local tag=$1 port=$2 rounds=$3 grid=$4
  shift 4
  pids=()
  for k in $(seq 0 $((n - 1))); do
    peer_cmd "$tag" "$k" "$port" "$rounds" "$grid" "$@"
    "$WAN" exec "$k" timeout 600 "${PEER[@]}" >"$out/$tag-$k.out" 2>"$out/$tag-$k.err" &
    pids+=($!)
    [ "$k" -ne 0 ] || sleep 1
  done
}

# wait_round tag r dead...: until round r has begun: every peer started (r = 0), or a live
# peer has reported r rounds; at most 300 s
wait_round() {
  local tag=$1 r=$2
  shift 2
  local dead=" $* " deadline=$((SECONDS + 300)) started
  while [ $SECONDS -lt $deadline ]; do
    started=0
    for k in $(seq 0 $((n - 1))); do
      [[ "$dead" == *" $k "* ]] && continue
      if [ "$r" -eq 0 ]; then
        grep -q '^start at' "$out/$tag-$k.out" 2>/dev/null && started=$((started + 1))
      else
        [ "$(grep -c '^round' "$out/$tag-$k.out" 2>/dev/null || true)" -ge "$r" ] && started=$((started + 1))
      fi
    done
    if [ "$r" -eq 0 ] && [ $started -eq "$n" ]; then return 0; fi
    if [ "$r" -gt 0 ] && [ $started -ge 1 ]; then return 0; fi
    sleep 0.2
  done
}

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

# kill_in_rounds tag victims...: victim r is SIGKILLed in round r, 1 s after the first survivor
# began that round, and stays dead; then waits for the run to end
kill_in_rounds() {
  local tag=$1 r=0 v
  shift
  local dead=()
  for v in "$@"; do
    wait_round "$tag" "$r" "${dead[@]}"
    sleep 1
    "$WAN" kill "$v"
    dead+=("$v")
    echo "round $r killed $v at $(cat "$WAN_STATE/killed-$v")" | tee -a "$out/$tag-victims"
    r=$((r + 1))
  done
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
