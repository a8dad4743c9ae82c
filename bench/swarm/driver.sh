#!/usr/bin/env bash
# driver.sh ROOT OUT COUNT: run.sh's driver, inside tests/wan/wan.sh (WAN, WAN_STATE, WAN_PEERS set).
# Every wait has a deadline: each program runs under timeout(1) in its namespace.
set -euo pipefail
root=$1 out=$2 count=$3
tern=$root/build/tern bin=$root/build/tests/wan
n=$WAN_PEERS
only=${BENCH_ONLY:-}         # "grid24": the ring and the 2x4 grids only
r24=${BENCH_ROUNDS_24:-3}    # rounds of the 2x4 runs (the int8 one does one more)
"$WAN" links >"$out/links"

log() { echo "[$(date -u +%T)] $*"; }

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

swarm() { # tag port rounds grid (2,2,2 or 2,4), then extra tern swarm options
  local tag=$1 port=$2 rounds=$3 grid=$4
  shift 4
  local boot
  boot="$("$WAN" addr 0):$port"
  pids=()
  for k in $(seq 0 $((n - 1))); do
    local join=()
    [ "$k" -eq 0 ] || join=(--join "$boot")
    local coord="$((k % 2)),$((k / 2 % 2)),$((k / 4))"
    [ "$grid" = 2,2,2 ] || coord="$((k % 2)),$((k / 2))"
    "$WAN" exec "$k" timeout 400 "$tern" swarm --listen "$("$WAN" addr "$k"):$port" "${join[@]}" \
      --run-id "bench-$tag" --grid "$grid" --coord "$coord" \
      --dim "$count" --init-peer "$k" --peers "$n" --rounds "$rounds" --show 2 "$@" \
      >"$out/$tag-$k.out" 2>"$out/$tag-$k.err" &
    pids+=($!)
    [ "$k" -ne 0 ] || sleep 1
  done
}

log "ring: one timed call of $count floats"
ring ring "$count:1"
wait_all pids
kill "$store_pid" 2>/dev/null || true
grep -h seconds_per_iter "$out"/ring-*.out || log "ring: no timing line"

# --timeout: the all-reduce's deadline, half of which is the parts' (a 32 MiB half-vector over the
# slowest link used, Frankfurt-Oregon at 40 Mbit/s x 0.1 scale... see run.sh's header)
opts=(--match-timeout 20 --timeout 60)

if [ -z "$only" ]; then
log "moshpit plain"
swarm plain 7101 4 2,2,2 "${opts[@]}"
wait_all pids
log "moshpit int8"
swarm int8 7102 6 2,2,2 "${opts[@]}" --compress int8
wait_all pids
fi
# the same on a 2x4 grid: round 0 pairs the peers of a region, round 1 groups one peer of each
# region (exact after 2 rounds; each peer's cross-region traffic is 3 quarters, spread over 3 links)
log "moshpit plain, grid 2x4"
swarm plain24 7105 "$r24" 2,4 "${opts[@]}" --target-group 4
wait_all pids
log "moshpit int8, grid 2x4"
swarm int824 7106 $((r24 + 1)) 2,4 "${opts[@]}" --target-group 4 --compress int8
wait_all pids

# two sets of victims, one per round 0-3, each 1 s after the first survivor began that round:
#   kill   peers 1, 3, 5, 7: the survivors 0, 2, 4, 6 still form a full 2x2 grid on axes 1-2
#   kill2  peers 1, 2, 4, 7: in rounds 1 and 2 the victim is peer 0's partner of that round
kill_run() { # tag port victims...
  local tag=$1 port=$2
  shift 2
  local victims=("$@") dead=()
  log "moshpit $tag: a peer killed in each of rounds 0-3 (peers ${victims[*]})"
  swarm "$tag" "$port" 8 2,2,2 "${opts[@]}"
  for r in 0 1 2 3; do
    # round r has begun when a survivor has reported r rounds (r = 0: when all have started)
    local deadline=$((SECONDS + 300)) started
    while [ $SECONDS -lt $deadline ]; do
      started=0
      for k in $(seq 0 $((n - 1))); do
        [[ " ${dead[*]} " == *" $k "* ]] && continue
        if [ "$r" -eq 0 ]; then
          grep -q '^start at' "$out/$tag-$k.out" 2>/dev/null && started=$((started + 1))
        else
          [ "$(grep -c '^round' "$out/$tag-$k.out" 2>/dev/null || true)" -ge "$r" ] && started=$((started + 1))
        fi
      done
      if [ "$r" -eq 0 ] && [ $started -eq "$n" ]; then break; fi
      if [ "$r" -gt 0 ] && [ $started -ge 1 ]; then break; fi
      sleep 0.2
    done
    sleep 1
    local v=${victims[$r]}
    "$WAN" kill "$v"
    dead+=("$v")
    echo "round $r killed $v at $(cat "$WAN_STATE/killed-$v")" | tee -a "$out/$tag-victims"
  done
  wait_all pids
}
[ -z "$only" ] || { log "done ($only only)"; exit 0; }
kill_run kill 7103 1 3 5 7
kill_run kill2 7104 1 2 4 7

log "ring with peer 5 killed 10 s into the calls"
ring ringkill --until-error "$count" 120
sleep 10
"$WAN" kill 5
echo "killed 5 at $(cat "$WAN_STATE/killed-5")" | tee "$out/ringkill-victims"
wait_all pids
kill "$store_pid" 2>/dev/null || true
grep -h 'failed after\|no failure' "$out"/ringkill-*.out || true
log "done"
