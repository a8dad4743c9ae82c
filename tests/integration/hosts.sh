#!/usr/bin/env bash
# hosts.sh CASE TERN RANK: two hosts made of network + UTS namespaces (each its own
# hostname, so tern sees two hosts: shared memory within, TCP across), joined by a veth pair
# (10.79.0.1 and 10.79.0.2, nothing routed elsewhere), 2 ranks on each, running
# `tern bench allreduce` (every result checked: #wrong must be 0) as the user would:
#   tern_run_nnodes  one `tern run --nnodes 2 --node-rank K --master 10.79.0.1:PORT -n 2` per
#                    host, as ssh or srun would start them; the ranks also report torchrun's
#                    variables, which must number them 0..3 with LOCAL_RANK and GROUP_RANK
#   tern_store       `tern store --listen 10.79.0.1:PORT -n 4` on host 0, and each rank started
#                    by hand with TERN_RANK, TERN_WORLD_SIZE and TERN_STORE=10.79.0.1:PORT
#   rank_dies_on_other_host  as tern_run_nnodes, but the ranks are RANK (rank.c) and rank 3, on
#                    host 1, SIGKILLs itself: ranks 0 to 2, on both hosts, must be told by the
#                    store, host 1's tern run must exit 137, host 0's once its ranks are told
# Needs root, ip and unshare (exit 77 without them). Namespaces are named core-hosts<pid>-{0,1}
# and deleted on exit.
set -u
case=$1 tern=$2 rank=${3:-}
[ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && command -v unshare >/dev/null ||
  { echo "needs root, ip and unshare: skipped"; exit 77; }
ns0=core-hosts$$-0 ns1=core-hosts$$-1 port=29500
out=$(mktemp -d)
cleanup() {
  for ns in $ns0 $ns1; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$out"
}
trap cleanup EXIT
ip netns add $ns0 && ip netns add $ns1 || { echo "cannot make namespaces: skipped"; exit 77; }
ip link add core$$a netns $ns0 type veth peer name core$$b netns $ns1 || exit 1
ip -n $ns0 addr add 10.79.0.1/24 dev core$$a && ip -n $ns1 addr add 10.79.0.2/24 dev core$$b
for ns in $ns0 $ns1; do ip -n "$ns" link set lo up; done
ip -n $ns0 link set core$$a up && ip -n $ns1 link set core$$b up

# on HOST CMD...: CMD in host HOST's namespaces, with hostname core-host-HOST
on() {
  local h=$1 ns
  shift
  ns=$([ "$h" = 0 ] && echo $ns0 || echo $ns1)
  ip netns exec "$ns" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "core-host-$h" "$@"
}

bench=("$tern" bench allreduce -b 8 -e 1M -f 32 -n 5 -w 1 -c 1)
show_vars='echo "vars RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE GROUP_RANK=$GROUP_RANK host=$(hostname)"'
export TERN_TIMEOUT=30 TERN_DEBUG=INFO
case $case in
  tern_run_nnodes)
    for h in 0 1; do
      on $h timeout -k 5 60 "$tern" run --nnodes 2 --node-rank $h --master 10.79.0.1:$port -n 2 \
        --tag-output -- sh -c "$show_vars; exec ${bench[*]}" >"$out/$h" 2>&1 &
    done ;;
  rank_dies_on_other_host)
    for h in 0 1; do
      on $h timeout -k 5 60 "$tern" run --nnodes 2 --node-rank $h --master 10.79.0.1:$port -n 2 \
        -- "$rank" kill 3 >"$out/$h" 2>&1 &
    done
    pids=$(jobs -p)
    rcs=()
    for job in $pids; do wait "$job"; rcs+=($?); done
    cat "$out"/*
    [ "${rcs[1]}" -eq 137 ] || { echo "FAIL $case: host 1's tern run exited ${rcs[1]}, not 137"; exit 1; }
    [ "$(cat "$out"/* | grep -c "told: lost rank 3")" -eq 3 ] ||
      { echo "FAIL $case: not every other rank was told of rank 3"; exit 1; }
    echo "PASS $case: ranks 0-2 told of rank 3, host 0 exited ${rcs[0]}, host 1 ${rcs[1]}"
    exit 0 ;;
  tern_store)
    on 0 timeout -k 5 60 "$tern" store --listen 10.79.0.1:$port -n 4 >"$out/store" 2>&1 &
    for h in 0 1; do
      for l in 0 1; do
        on $h env TERN_RANK=$((2 * h + l)) TERN_WORLD_SIZE=4 TERN_STORE=10.79.0.1:$port \
          timeout -k 5 60 "${bench[@]}" >"$out/$h.$l" 2>&1 &
      done
    done ;;
  *) echo "hosts.sh: no case '$case'"; exit 2 ;;
esac
fail=0
for job in $(jobs -p); do wait "$job" || fail=1; done
cat "$out"/*
[ "$fail" -eq 0 ] || { echo "FAIL $case: a host's command failed"; exit 1; }
table=$(cat "$out"/* | sed 's/^\[1,0\]<stdout>://' | grep -E '^ +[0-9]+ +[0-9]+ +float')
[ "$(echo "$table" | wc -l)" -ge 3 ] || { echo "FAIL $case: no bench rows from rank 0"; exit 1; }
echo "$table" | awk '$9 != 0 || $13 != 0 { bad = 1 } END { exit bad }' ||
  { echo "FAIL $case: wrong results"; exit 1; }
grep -q "4 ranks" "$out"/* || { echo "FAIL $case: not one job of 4 ranks"; exit 1; }
[ "$(cat "$out"/* | grep -c "up: 1 peers on shared memory, 2 over TCP")" -eq 4 ] ||
  { echo "FAIL $case: the ranks did not see two hosts of two"; exit 1; }
if [ "$case" = tern_run_nnodes ]; then
  for r in 0 1 2 3; do
    h=$((r / 2)) l=$((r % 2))
    grep -q "^\[1,$r\]<stdout>:vars RANK=$r LOCAL_RANK=$l WORLD_SIZE=4 GROUP_RANK=$h host=core-host-$h" "$out/$h" ||
      { echo "FAIL $case: rank $r's torchrun variables"; exit 1; }
  done
fi
echo "PASS $case: 2 hosts x 2 ranks, allreduce checked"
