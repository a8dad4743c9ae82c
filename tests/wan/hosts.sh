#!/usr/bin/env bash
# hosts.sh: tern across real hosts, ranks placed on them in any order. Each host is a network
# namespace joined to the others by a bridge (in a hub namespace), and each rank runs in a UTS
# namespace of its own with its host's hostname, so tern (which knows a host by hostname and
# boot id, docs/ENVIRONMENT.md) sees separate hosts: shared memory within one, TCP across.
# Ranks start with torchrun's variables (rank 0 serves the store at MASTER_ADDR:MASTER_PORT).
#
#   hosts.sh BIN_DIR   (the directory holding coll_matrix)
#
# Layouts, each run through coll_matrix (every collective, dtype, op, in place or not, counts
# past the transports' thresholds, every element compared bit for bit):
#   round-robin: 6 ranks dealt over 3 hosts as `mpirun --map-by node` deals them, TERN_ALGO=hier
#   uneven:      3 + 1 ranks on 2 hosts, TERN_ALGO=hier:rhd
#   mixed:       7 ranks on 3 hosts as 0 1 0 0 1 2 2, the selector choosing
# and in each forced run rank 0's log (TERN_DEBUG=INFO) must name hier and both of its levels.
# Namespaces are named hosts-<pid>-*; everything is taken down on exit. Needs root (exit 77
# without it: CTest counts the test skipped).
set -euo pipefail

bin=${1:?usage: hosts.sh BIN_DIR}
# shellcheck source=tests/wan/nshosts.sh
. "$(dirname "$0")/nshosts.sh"
nsh_need hosts.sh
# Two networks: eth0 (10.79.0.0/24, where the store is) and eth1 (10.80.0.0/24), each a bridge.
nsh_up hosts 3 2 79

# run NAME ALGO HOST_OF_RANK_0 HOST_OF_RANK_1 ...: one job, every rank in its host's namespace.
run() {
  local name=$1 algo=$2
  shift 2
  local n=$# r=0 host
  pids=()
  for host in "$@"; do
    local env=(RANK=$r WORLD_SIZE=$n MASTER_ADDR=10.79.0.1 MASTER_PORT=29500 TERN_TIMEOUT=60
               TERN_SOCKET_IFNAME="${ifname:-}")
    [ -n "$algo" ] && env+=(TERN_ALGO="$algo")
    [ "$r" -eq 0 ] && env+=(TERN_DEBUG=INFO)
    nsh_spawn "$host" "hosts-h$host" env "${env[@]}" timeout 150 "$bin/coll_matrix" \
      >"$state/$name-out-$r" 2>"$state/$name-err-$r"
    r=$((r + 1))
  done
  local ok=1
  for r in $(seq 0 $((n - 1))); do
    wait "${pids[$r]}" || { ok=0; echo "FAIL: $name: rank $r exited non-zero"; tail -5 "$state/$name-err-$r"; }
  done
  pids=()
  [ "$ok" -eq 1 ] || exit 1
  grep -h "checks" "$state/$name-out-0" | tail -1 | sed "s/^/$name: /"
}

# run_fails NAME MESSAGE HOSTS...: a job whose rank 0 must fail saying MESSAGE.
run_fails() {
  local name=$1 msg=$2
  shift 2
  ! (run "$name" "" "$@") >/dev/null 2>&1 || { echo "FAIL: $name ran"; exit 1; }
  grep -qF -- "$msg" "$state/$name-err-0" || { echo "FAIL: $name: no '$msg'"; tail -3 "$state/$name-err-0"; exit 1; }
  echo "$name: refused: $msg"
}

# expect NAME PATTERN: rank 0's log of job NAME has a line with PATTERN.
expect() {
  grep -q -- "$2" "$state/$1-err-0" || { echo "FAIL: $1: no log line with '$2'"; grep -m3 'allreduce #' "$state/$1-err-0"; exit 1; }
  echo "$1: $(grep -m1 -o -- "$2.*" "$state/$1-err-0")"
}

run round-robin hier 0 1 2 0 1 2
expect round-robin "hier (within hosts ring, across hosts ring; 3 hosts x 2 lanes) over shm+tcp"
run uneven hier:rhd 0 0 0 1
expect uneven "hier (within hosts ring, across hosts rhd; 2 hosts x 1 lanes, 2 ranks folded in) over shm+tcp"
run mixed "" 0 1 0 0 1 2 2
echo "mixed: the selector's choices on rank 0:" $(grep -o ", [a-z]* over\|, hier (within[^)]*)" \
  "$state/mixed-err-0" | sort | uniq -c | tr -s ' ' | tr '\n' ';')

# TERN_SOCKET_IFNAME: the store is reached on eth0, the collectives must go over eth1.
rx() { ip netns exec "$prefix-h1" cat "/sys/class/net/$1/statistics/rx_bytes"; }
eth0=$(rx eth0) eth1=$(rx eth1)
ifname="^eth0,lo" run ifname hier 0 1 0 1
expect ifname "TCP on 10.80.0.1 (eth1: TERN_SOCKET_IFNAME='^eth0,lo')"
eth0=$(($(rx eth0) - eth0)) eth1=$(($(rx eth1) - eth1))
echo "ifname: host 1 received $eth0 bytes on eth0, $eth1 on eth1"
[ "$eth1" -gt $((20 * eth0)) ] || { echo "FAIL: the collectives did not go over eth1"; exit 1; }
ifname="=eth" run_fails ifname-none "TERN_SOCKET_IFNAME='=eth' selects no interface that is up with an address (this host has: lo, eth0, eth1)" 0 1
echo "PASS: round-robin, uneven and mixed placements exact across 3 namespace hosts; TERN_SOCKET_IFNAME chose eth1"
