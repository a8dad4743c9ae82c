# lib.sh: the helpers of the swarm benchmarks' drivers (driver.sh, fair_driver.sh), sourced
# inside tests/wan/wan.sh (WAN, WAN_STATE, WAN_PEERS set). They use the driver's variables: out
# (the raw output directory), n (peers), count (floats), tern and bin (the programs).
# Every wait has a deadline: each program runs under timeout(1) in its namespace.

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

# ring tag, then wan_allreduce's arguments: tern's allreduce on the 8 peers, TERN_ALGO=ring, or
# RING_ALGO with RING_HOSTS as TERN_HOSTS (hier with the regions as hosts: RING_ALGO=hier
# RING_HOSTS=4, peers 2r and 2r+1 being region r)
ring() {
  local tag=$1
  shift
  start_store "$tag"
  pids=()
  for r in $(seq 0 $((n - 1))); do
    env TERN_ALGO="${RING_ALGO:-ring}" ${RING_HOSTS:+TERN_HOSTS=$RING_HOSTS} \
      TERN_TIMEOUT=120 TERN_RANK=$r TERN_WORLD_SIZE=$n TERN_STORE=$STORE \
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
# grid: 2,2,2 (coordinate (k%2, k/2%2, k/4)), 2,4 ((k%2, k/2)), gossip (cell k, random pairs) or
# region (--region: the harness's region of peer k, bandwidth measured)
peer_cmd() {
  local tag=$1 k=$2 port=$3 rounds=$4 grid=$5
  shift 5
  local join=() place=(--grid "$grid" --coord "$((k % 2)),$((k / 2 % 2)),$((k / 4))")
  [ "$k" -eq 0 ] || join=(--join "$("$WAN" addr 0):${BOOT_PORT:-$port}")
  [ "$grid" != 2,4 ] || place=(--grid 2,4 --coord "$((k % 2)),$((k / 2))")
  [ "$grid" != gossip ] || place=(--coord "$k" --random-groups $((n / 2)) --target-group 2)
  local bw=(--bandwidth "$(declared_bw "$k")")
  # region: the peer's region places it, and it measures its bandwidth (probe.c)
  [ "$grid" != region ] || { place=(--region "$("$WAN" region "$k")" --grid 2,4); bw=(); }
  # SWARM_KEYLESS=1: no key, every message in clear (--insecure), as the allreduces send theirs
  local key=(--key "bench-$tag")
  [ -z "${SWARM_KEYLESS:-}" ] || key=(--insecure)
  PEER=("$tern" swarm --listen "$("$WAN" addr "$k"):$port" "${join[@]}" --run-id "bench-$tag"
        "${key[@]}" "${place[@]}" --dim "$count" --init-peer "$k" --peers "$n" --rounds "$rounds" --show 2
        --sketch "${bw[@]}" "$@")
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

