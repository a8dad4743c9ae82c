# shellcheck shell=bash disable=SC2154,SC2034
# (here, prefix, state: the sourcing script's and nshosts.sh's; what hosts_setup sets is used there)
# lib.sh: namespace hosts shaped by tbf, and jobs of ranks on them (sourced by run.sh and
# tune.sh, from bench/hosts/).
#   hosts_setup SCRIPT PREFIX OUT_NAME [-o FILE]
#                       the defaults both scripts share (root, build, tern, RATES, LAYOUTS,
#                       COLLS; out: -o FILE, or bench/hosts/results/OUT_NAME), then, needing
#                       root, $maxhosts = 4 hosts named PREFIX, unshaped, on one network
#                       (tests/wan/nshosts.sh's nsh_up: 10.81.0.(i+1) on eth0, one bridge)
#   shape RATE          tbf on both ends of every host's veth: a NIC of RATE, full duplex, a burst
#                       of 256 KiB, 20 ms of queue
#   job NAME HOST... -- CMD...
#                       one job of CMD, rank r on the r-th host given ("lo": host 0, over TCP),
#                       launched with torchrun's variables (rank 0 serves the store), the
#                       array JOB_ENV added to each rank's environment; waits for it;
#                       rank r's stdout in $state/NAME.r, stderr in $state/NAME.err.r, rank 0's
#                       stdout then moved to $state/NAME. Non-zero, said on stderr, when a rank
#                       failed.
#   hosts_of H RPH      the host of each of H x RPH ranks placed in order, RPH a host

hosts_setup() {
  root=$(cd "$here/../.." && pwd)
  build=${BUILD:-$root/build}
  tern=${TERN:-$build/tern}
  out=$here/results/$3
  [ "${4:-}" = -o ] && out=$5
  RATES=${RATES:-"1gbit 4gbit"}
  LAYOUTS=${LAYOUTS:-"2x2 3x2 4x2"}
  COLLS=${COLLS:-"allreduce reduce_scatter allgather"}
  # shellcheck source=tests/wan/nshosts.sh
  . "$root/tests/wan/nshosts.sh"
  nsh_need "$1"
  maxhosts=4
  nsh_up "$2" "$maxhosts" 1 81
}

shape() {
  local i
  for i in $(seq 0 $((maxhosts - 1))); do
    tc -n "$prefix-h$i" qdisc replace dev eth0 root tbf rate "$1" burst 256kb latency 20ms
    tc -n "$prefix-hub" qdisc replace dev "$(nsh_hub_if "$i" 0)" root tbf rate "$1" burst 256kb \
      latency 20ms
  done
}

job_port=29600
job() {
  local name=$1
  shift
  local hosts=() host
  while [ "$1" != -- ]; do hosts+=("$1"); shift; done
  shift
  local n=${#hosts[@]} r=0 h0=${hosts[0]/lo/0}
  job_port=$((job_port + 1))
  pids=()
  for host in "${hosts[@]}"; do
    local env=("RANK=$r" "WORLD_SIZE=$n" "MASTER_ADDR=10.81.0.$((h0 + 1))"
               "MASTER_PORT=$job_port" TERN_TIMEOUT=60 "${JOB_ENV[@]}")
    [ "$host" = lo ] && env+=(TERN_TRANSPORT=tcp) && host=0
    nsh_spawn "$host" "bhost$host" env "${env[@]}" timeout 300 "$@" >"$state/$name.$r" \
      2>"$state/$name.err.$r"
    r=$((r + 1))
  done
  local ok=0 p
  for p in "${pids[@]}"; do wait "$p" || ok=1; done
  pids=()
  [ "$ok" -eq 0 ] || { echo "$name failed: $(tail -2 "$state/$name.err.0")" >&2; return 1; }
  mv "$state/$name.0" "$state/$name"
}

hosts_of() {
  local h _
  for h in $(seq 0 $(($1 - 1))); do for _ in $(seq 1 "$2"); do echo -n "$h "; done; done
}
