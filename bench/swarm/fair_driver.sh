#!/usr/bin/env bash
# fair_driver.sh ROOT OUT COUNT REPS: fair.sh's driver, inside tests/wan/wan.sh (WAN, WAN_STATE,
# WAN_PEERS set). Each repetition runs every scenario once, in this order (so that the machine's
# load falls on all of them alike):
#   ring        tern's allreduce, TERN_ALGO=ring over the 8 peers (flat, blind to regions)
#   hier        tern's allreduce, TERN_ALGO=hier with TERN_HOSTS=4: the regions as hosts, so
#               the 2 peers of a region reduce together (shared memory) and one ring per lane
#               crosses the regions: the region-first ring
#   mosh        Moshpit, grid 2x2x2 (coordinate (k%2, k/2%2, k/4)), f32, declared bandwidths
#   region      region-aware Moshpit (--region, bandwidth measured), f32
#   regionef    the same with --compress int8ef (across regions; f32 inside one)
# The Moshpit peers run without a key (--insecure), as the allreduces send in clear.
#   ringkill, hierkill   the allreduces called until one fails, a peer SIGKILLed 5 s in
#   moshkill, regionkill the Moshpit runs over 8 rounds, peers 3, 4, 1, 6 (one per region)
#               SIGKILLed in rounds 0-3, 1 s after the first survivor began the round
# FAIR_ONLY="ring hier ..." runs only those scenarios.
set -euo pipefail
root=$1 out=$2 count=$3 reps=$4
tern=$root/build/tern bin=$root/build/tests/wan
n=$WAN_PEERS
only=${FAIR_ONLY:-ring hier mosh region regionef ringkill hierkill moshkill regionkill}
"$WAN" links >"$out/links"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
wanted() { [[ " $only " == *" $1 "* ]]; }
opts=(--match-timeout 20 --timeout 60)
# Moshpit in clear, as the allreduces: sealing every message costs the 2 shared cores (keyed,
# the region-aware runs' region rounds took 7-9 s for 64 MiB on 10 Gbit/s links)
export SWARM_KEYLESS=1
port=7200

allreduce() { # tag algo hosts, then wan_allreduce's arguments
  local tag=$1
  RING_ALGO=$2 RING_HOSTS=$3
  shift 3
  ring "$tag" "$@"
  wait_all pids
  kill "$store_pid" 2>/dev/null || true
  RING_ALGO="" RING_HOSTS=""
}

allreduce_kill() { # tag algo hosts: calls until one fails, peer 5 killed 5 s in
  local tag=$1
  RING_ALGO=$2 RING_HOSTS=$3
  ring "$tag" --until-error "$count" 120
  sleep 5
  "$WAN" kill 5
  echo "killed 5 at $(cat "$WAN_STATE/killed-5")" >"$out/$tag-victims"
  wait_all pids
  kill "$store_pid" 2>/dev/null || true
  RING_ALGO="" RING_HOSTS=""
}

for rep in $(seq "$reps"); do
  if wanted ring; then
    log "rep $rep: flat ring"
    allreduce "ring-$rep" ring "" "$count:1"
  fi
  if wanted hier; then
    log "rep $rep: region-first ring (hier, regions as hosts)"
    allreduce "hier-$rep" hier 4 "$count:1"
  fi
  if wanted mosh; then
    log "rep $rep: Moshpit 2x2x2"
    swarm "mosh-$rep" $((port++)) 4 2,2,2 "${opts[@]}"
    wait_all pids
  fi
  if wanted region; then
    log "rep $rep: region-aware Moshpit, f32"
    swarm "region-$rep" $((port++)) 3 region "${opts[@]}" --target-group 4
    wait_all pids
  fi
  if wanted regionef; then
    log "rep $rep: region-aware Moshpit, int8ef"
    swarm "regionef-$rep" $((port++)) 5 region "${opts[@]}" --target-group 4 --compress int8ef
    wait_all pids
  fi
  if wanted ringkill; then
    log "rep $rep: flat ring, peer 5 killed"
    allreduce_kill "ringkill-$rep" ring ""
  fi
  if wanted hierkill; then
    log "rep $rep: region-first ring, peer 5 killed"
    allreduce_kill "hierkill-$rep" hier 4
  fi
  if wanted moshkill; then
    log "rep $rep: Moshpit 2x2x2, peers 3 4 1 6 killed in rounds 0-3"
    swarm "moshkill-$rep" $((port++)) 8 2,2,2 "${opts[@]}"
    kill_in_rounds "moshkill-$rep" 3 4 1 6
  fi
  if wanted regionkill; then
    log "rep $rep: region-aware Moshpit, peers 3 4 1 6 killed in rounds 0-3"
    swarm "regionkill-$rep" $((port++)) 8 region "${opts[@]}" --target-group 4
    kill_in_rounds "regionkill-$rep" 3 4 1 6
  fi
done
log "done"
