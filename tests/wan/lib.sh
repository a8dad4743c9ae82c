# shellcheck shell=bash
# lib.sh: what the WAN test drivers share (sourced; they run inside wan.sh, so WAN, WAN_STATE
# and WAN_PEERS are set, and $bin is the directory of the test programs):
#   start_store          wan_store in peer 0's namespace; sets STORE (address:port)
#   start_ranks ARGS..   one wan_allreduce per peer with TERN_RANK, TERN_WORLD_SIZE, TERN_STORE
#                        set by hand; its output goes to $WAN_STATE/out-R and err-R; sets pids
#   wait_ranks           waits for them; sets codes (their exit codes, by rank)
#   ring_model COUNT     the modelled seconds per ring allreduce of COUNT floats (below)
#   start_swarm_peers PORT DELAY  `tern swarm` in every peer's namespace, listening on PORT,
#                        peer 0 the bootstrap the others join, DELAY s after it; the caller's
#                        swarm_args K sets the array args to peer K's other arguments; output
#                        in $WAN_STATE/swarm-K.out and .err; sets pids
#   fail MSG             prints MSG and every rank's stderr, exits 1

fail() {
  echo "FAIL: $*"
  for f in "$WAN_STATE"/err-*; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
  exit 1
}

start_store() {
  "$WAN" exec 0 "$bin/wan_store" "$WAN_PEERS" 110 >"$WAN_STATE/store-port" 2>"$WAN_STATE/err-store" &
  local port=""
  for _ in $(seq 50); do
    port=$(cat "$WAN_STATE/store-port")
    [ -z "$port" ] || break
    sleep 0.1
  done
  [ -n "$port" ] || fail "the store did not start"
  STORE="$("$WAN" addr 0):$port"
}

start_ranks() {
  pids=()
  for r in $(seq 0 $((WAN_PEERS - 1))); do
    TERN_RANK=$r TERN_WORLD_SIZE=$WAN_PEERS TERN_STORE=$STORE \
      "$WAN" exec "$r" "$bin/wan_allreduce" "$@" >"$WAN_STATE/out-$r" 2>"$WAN_STATE/err-$r" &
    pids+=($!)
  done
}

start_swarm_peers() {
  local port=$1 delay=$2 k boot
  boot="$("$WAN" addr 0):$port"
  pids=()
  for k in $(seq 0 $((WAN_PEERS - 1))); do
    local join=()
    [ "$k" -eq 0 ] || join=(--join "$boot")
    args=()
    swarm_args "$k"
    "$WAN" exec "$k" timeout 90 "$bin/../../tern" swarm --listen "$("$WAN" addr "$k"):$port" \
      "${join[@]}" "${args[@]}" >"$WAN_STATE/swarm-$k.out" 2>"$WAN_STATE/swarm-$k.err" &
    pids+=($!)
    [ "$k" -ne 0 ] || sleep "$delay"
  done
}

wait_ranks() {
  codes=()
  for p in "${pids[@]}"; do
    local c=0
    wait "$p" 2>/dev/null || c=$?
    codes+=("$c")
  done
}

# Ring allreduce over ranks 0..n-1 in order, as tern's ring (src/coll/algo/ring.c) runs it: 2(n-1)
# phases, in each of which every rank sends one block of COUNT/n floats to the next and receives
# one from the previous, and starts a phase when its previous one is done. Back-to-back calls
# settle at the larger of two paces per phase (the max-plus cycle of that dependence graph):
#   the ring's cycle: the sum over the n hops of (one-way latency + block / rate), over n;
#   the slowest link: block / rate, as a link carries one block per phase and cannot overlap two.
# Hops inside a region have no latency and the intra-region rate. Prints "MODEL CYCLE SLOWEST",
# each in seconds per call.
ring_model() {
  "$WAN" links | awk -v count="$1" -v intra="$(cat "$WAN_STATE/intra")" '
    NF == 4 { region[$1] = $2; n++ }
    NF == 9 { lat[$1 "," $2] = lat[$2 "," $1] = $6 / 1000; kbit[$1 "," $2] = kbit[$2 "," $1] = $8 }
    END {
      bits = count * 4 / n * 8
      for (i = 0; i < n; i++) {
        a = region[i]; b = region[(i + 1) % n]
        if (a == b) { h = bits / (intra * 1000); s = h }
        else { s = bits / (kbit[a "," b] * 1000); h = lat[a "," b] + s }
        cycle += h
        if (s > slowest) slowest = s
      }
      phases = 2 * (n - 1)
      cycle = phases * cycle / n; slowest = phases * slowest
      model = cycle > slowest ? cycle : slowest
      printf "%.6f %.6f %.6f\n", model, cycle, slowest
    }'
}
