#!/usr/bin/env bash
# leader_dies.sh TERN: four peers on one line (--grid 4). All four see each other's records in
# round 0; the one with the lowest id is to lead, and dies right then, before it takes a join
# (TERN_SWARM_FAULT=exit-before-lead; TERN_SWARM_FAULT_ONCE lets only the first peer to get
# there fire, since nobody knows beforehand which id is lowest). The three survivors each find
# it gone and turn to the next lowest id, which sends whoever asks it before it has found out
# on to the dead leader. All three must still average in round 0 as one group of 3. Before, 5
# runs in 7 failed, in two ways (each fix alone: 3 in 10 and 3 in 12; both: 0 in 20):
# - a survivor sent on to the dead leader took that for an answer, went to the pool alone and
#   averaged with nobody (the WAN kill test's 2-in-36 failure);
# - a survivor spent 2 s retrying the dead leader's refused connects, and the other two had
#   closed their group of 2 by the time it asked.
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "leader-$$" --grid 4 --rounds 1 --dim 1000 --min-group 2 --target-group 4
        --match-timeout 10 --timeout 10)
export TERN_SWARM_FAULT=exit-before-lead TERN_SWARM_FAULT_ONCE="$WORK/fired" TERN_DEBUG=INFO
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --coord 0 --value 0
A=$(addr_of p0)
for c in 1 2 3; do
  start_peer "p$c" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --coord "$c" --value $((10 * c))
done
dead=""
for p in p0 p1 p2 p3; do
  code=0
  wait "$(eval echo \$PID_$p)" || code=$?
  case $code in
    0) ;;
    9) [ -z "$dead" ] || fail "$dead and $p both exited at the failpoint"; dead=$p ;;
    *) fail "$p exited with $code" ;;
  esac
done
[ -n "$dead" ] || fail "no peer exited at the failpoint: the leader did not die"
[ -e "$WORK/fired" ] || fail "the failpoint's token file is missing"
for p in p0 p1 p2 p3; do
  [ "$p" = "$dead" ] && continue
  grep -q '^round 0 group 3 failed 0 parts 3/3' "$WORK/$p.out" ||
    fail "$p did not average round 0 in one group with the other two survivors"
done
asked=$(cat "$WORK"/*.err | grep -c "still follows a dead leader")
echo "OK: the leader $dead died before taking a join; the three survivors averaged as one group ($asked redirects to it asked again)"
