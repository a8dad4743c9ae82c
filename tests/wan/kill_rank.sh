#!/usr/bin/env bash
# kill_rank.sh BIN: a rank is SIGKILLed in the middle of tern's allreduce across the regions, and
# every other rank must be told: its call fails (TERN_ERR_PEER_LOST or TERN_ERR_TIMEOUT) within
# TELL_S seconds of the kill, with a message that names the victim (directly, or as the cause
# the store reports behind a neighbour that gave up first), and nothing hangs. The ranks
# loop on 1 MiB allreduces (each a few hundred ms over these links) and the kill lands after
# WARM_S seconds, wherever the ring stands. The victim is peer VICTIM's every process (its relay
# is the network, and stays), so its sockets close as a crashed process's do.
set -euo pipefail
bin=$1
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
VICTIM=5 WARM_S=4 TELL_S=5

export TERN_ALGO=ring TERN_TIMEOUT=10
start_store
start_ranks --until-error 262144 60
sleep "$WARM_S"
"$WAN" kill "$VICTIM"
killed=$(cat "$WAN_STATE/killed-$VICTIM")
wait_ranks

bad=0
for r in $(seq 0 $((WAN_PEERS - 1))); do
  out=$(cat "$WAN_STATE/out-$r")
  if [ "$r" -eq "$VICTIM" ]; then
    [ "${codes[$r]}" -ne 0 ] || { echo "FAIL: the victim, rank $r, exited 0"; bad=1; }
    continue
  fi
  line=$(grep '^rank [0-9]* failed after' <<<"$out" || true)
  [ -n "$line" ] || { echo "FAIL: rank $r was not told: ${out:-no output}"; bad=1; continue; }
  at=$(awk '{ print $8 }' <<<"$line")
  after=$(awk -v a="${at%:}" -v k="$killed" 'BEGIN { printf "%.3f", a - k }')
  echo "rank $r told $after s after the kill: ${line#*: }"
  awk -v s="$after" -v t=$TELL_S 'BEGIN { exit !(s >= 0 && s <= t) }' ||
    { echo "FAIL: rank $r was told $after s after the kill (at most $TELL_S)"; bad=1; }
  grep -Eq "TERN_ERR_(PEER_LOST|TIMEOUT).*rank ${VICTIM}[^0-9]" <<<"$line" ||
    { echo "FAIL: rank $r: the error is not a loss naming rank $VICTIM"; bad=1; }
done
[ $bad -eq 0 ] || fail "not every survivor was told"
echo "PASS: rank $VICTIM killed mid-allreduce; all $((WAN_PEERS - 1)) others told within $TELL_S s"
