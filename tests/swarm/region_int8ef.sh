#!/usr/bin/env bash
# region_int8ef.sh TERN: 8 peers in 4 regions (--region r0..r3, two each), the WAN benchmark's
# vectors (--init-peer), 8-bit codes with error feedback (--compress int8ef), 6 rounds. The
# regions place the peers: even rounds in pairs of one region, odd rounds in groups of 4, one peer
# of each region. Every peer must end within 1e-3 (relative L2) of the 8-peer average, where
# plain int8 stays about 6e-3 off (docs/SWARM.md, "8-bit with error feedback"), and must have
# been in a full region pair and a full group of 4 at least once each. (4 rounds are enough when
# every group is full; 6 leave room for a cross-region group that the matching closes on 3 of 4
# because one peer came late: about one run in five did until the first peer stopped
# forgetting its region line on the hellos of round 0, docs/SWARM.md "Regions".)
source "$(dirname "$0")/lib.sh" "$1"
for i in $(seq 0 7); do
  start_joined "p$i" "$i" --run-id "region-$$" --region "r$((i / 2))" \
    --dim 20000 --init-peer "$i" --peers 8 --rounds 6 --compress int8ef --target-group 4 \
    --match-timeout 16 --timeout 10 ${REGION_EXTRA:-}
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
for i in $(seq 0 7); do
  out=$WORK/p$i.out
  grep -q '^round [024] group 2 failed 0 parts 2/2' "$out" ||
    fail "peer $i: never in a full region pair: $(grep '^round' "$out")"
  grep -q '^round [135] group 4 failed 0 parts 4/4' "$out" ||
    fail "peer $i: never in a full cross-region group: $(grep '^round' "$out")"
  err=$(grep '^round' "$out" | tail -1 | awk '{ print $NF }')
  close_to "$err" 0 1e-3 || fail "peer $i ends $err from the average: $(grep '^round' "$out")"
done
echo "OK: 8 peers in 4 regions within 1e-3 of the average after 6 rounds of int8ef"
