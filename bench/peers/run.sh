#!/usr/bin/env bash
# run.sh: tern against Open MPI, MPICH and Gloo on this machine, the one command behind
# docs/PERFORMANCE.md. It builds tern and the peers' benchmarks (mpi_bench.c twice, gloo.py
# needs no build, membw.c), then runs, in rounds, every tool on every (transport, n) one after
# the other, the start of the order rotating each round so that slow drift hits all alike:
#
#   shm: tern (TERN_TRANSPORT=shm), ompi-shm, mpich-shm
#   tcp: tern (TERN_TRANSPORT=tcp), ompi-tcp (pml ob1, btl tcp,self), mpich-tcp (UCX over tcp/lo),
#        gloo (torch.distributed)
#
# each over allreduce, reduce_scatter, allgather and broadcast (f32 sum) at 8 B, then 16 B to
# 64 MiB in powers of 4, n = 2 and 4; then the oversubscribed sweep, allreduce at n = 8 and 16,
# 8 B, 64 KiB and 16 MiB, one round of 3 repeats (n = 4 comes from the main sweep); and, each
# round, membw (memcpy, sum-reduce and single-copy rates on one and two threads) for the
# large-message bound and the copy floor, and tcpfloor (one loopback TCP message) for the floor
# of a small TCP broadcast. Every tool times by one method (mpi_bench.c's first comment):
# checked call, warm-up, calibrated back-to-back calls, max over ranks, median of repeats; the
# tables take the median over rounds, within one placement of the vCPUs (c2c.c probes it before
# and after every launch; aggregate.py's placement_medians).
#
#   bench/peers/run.sh           full run (about 12 minutes here), rewrites results/ and the page
#   bench/peers/run.sh --quick   n = 2, three sizes, one round (about a minute): a smoke run,
#                                written to results-quick/, the page untouched
#   bench/peers/run.sh --small   shared memory only, 8 B to 4 KiB, n = 2 and 4, every collective,
#                                ROUNDS rounds (about 3 minutes at 3): for work on the small-message
#                                path, written to results-small/, the page untouched
#   bench/peers/run.sh --plots   tables, page and plots again from results/, without measuring
#
# Then `tern tune` (TUNE_BUDGET seconds, 60; 0 skips it) for the learned selector's held-out
# accuracy here.
# Knobs: ROUNDS (3), T (ms per repeat, 10), R (repeats, 5), TO (seconds per launch, 240),
# TUNE_BUDGET, BUILD (the tern build directory, build).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3 # Debian's, with torch and matplotlib (scripts/deps.sh bench)
build=$root/${BUILD:-build}
bin=$build/peers
mode=${1:-full}
case "$mode" in
  full | --full) mode=full ;;
  --quick) mode=quick ;;
  --small) mode=small ;;
  --plots) mode=plots ;;
  *) echo "usage: bench/peers/run.sh [--quick | --small | --plots]" >&2; exit 2 ;;
esac
results=$here/results
[ "$mode" = quick ] && results=$here/results-quick
[ "$mode" = small ] && results=$here/results-small

rounds=${ROUNDS:-3} T=${T:-10} R=${R:-5} TO=${TO:-240}
sizes=8,16,64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M
ns=(2 4)
trs=(shm tcp)
oversub_ns=(8 16) oversub_sizes=8,64K,16M oversub_colls=allreduce oversub_R=3
colls=(allreduce reduce_scatter allgather broadcast)
# per thread: the 16 and 64 MiB messages and their halves (what each rank of an allgather
# copies), and DRAM
membw_sizes=(8388608 16777216 33554432 67108864 536870912)
tcpfloor_sizes=(8 256 4096) # tcpfloor.c: one loopback message, the floor of a small TCP broadcast
if [ "$mode" = quick ]; then
  rounds=1 T=5 R=3 sizes=8,64K,1M ns=(2) oversub_ns=() membw_sizes=(16777216) tcpfloor_sizes=(8)
  TUNE_BUDGET=0
fi
if [ "$mode" = small ]; then
  sizes=8,16,64,256,1K,4K trs=(shm) oversub_ns=() membw_sizes=() tcpfloor_sizes=()
  TUNE_BUDGET=0
fi

build_all() {
  "$root/scripts/deps.sh" bench
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  nice -n 10 cmake --build "$build" -j2 --target tern_cli >/dev/null
  mkdir -p "$bin"
  local w=(-O2 -Wall -Wextra -Werror)
  mpicc.openmpi "${w[@]}" -o "$bin/mpi_bench_ompi" "$here/mpi_bench.c"
  mpicc.mpich "${w[@]}" -o "$bin/mpi_bench_mpich" "$here/mpi_bench.c"
  gcc -O3 -march=native -pthread "${w[@]}" -o "$bin/membw" "$here/membw.c"
  gcc -O2 -pthread "${w[@]}" -o "$bin/c2c" "$here/c2c.c"
  gcc -O2 "${w[@]}" -o "$bin/tcpfloor" "$here/tcpfloor.c"
}

# probed ROUND TOOL TR N COLLS OUT CMD...: launch, with the host's core-to-core latency (c2c.c)
# probed just before and just after into hoststate.csv, so that aggregate.py can tell in which
# placement of the vCPUs the tool ran
probed() {
  local head=$1,$2,$3,$4,${5//,/+} out=$6 before
  shift 6
  before=$("$bin/c2c")
  launch "$out" "$@"
  echo "$head,$before,$("$bin/c2c")" >>"$results/hoststate.csv"
}

# launch OUT CMD...: runs CMD into OUT under a deadline. MPICH over UCX/TCP sometimes hangs in
# MPI_Finalize after its last line (shared/peers/BASELINES.md, pathology 6): once "# done" is
# out, the launch gets 10 s more, then it is ended and logged as FINALIZE-HANG.
launch() {
  local out=$1
  shift
  timeout -k 5 "$TO" "$@" >"$out" 2>"$out.err" &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.2
    if grep -q '^# done' "$out" 2>/dev/null; then
      waited=$((waited + 1))
      if [ "$waited" -ge 50 ]; then
        echo "FINALIZE-HANG: $*" >>"$results/runs.log"
        kill -- "$pid" 2>/dev/null || true
        break
      fi
    fi
  done
  wait "$pid" 2>/dev/null || echo "exit $?: $*" >>"$results/runs.log"
}

# record ROUND TOOL TR N OUT: the tool's lines "coll bytes iters time_us busbw wrong" into raw.csv
record() {
  local round=$1 tool=$2 tr=$3 n=$4 out=$5
  awk -v r="$round" -v t="$tool" -v tr="$tr" -v n="$n" \
    'NF == 6 && $2 ~ /^[0-9]+$/ { print r "," t "," tr "," n "," $1 "," $2 "," $3 "," $4 "," $5 "," $6 }' \
    "$out" >>"$results/raw.csv"
}

# tern's own command, one launch per collective; the columns of the form the peers call become
# the same line: out of place, except broadcast, which MPI_Bcast and Gloo do in one buffer.
run_tern() {
  local round=$1 tr=$2 n=$3 list=$4 c out cs mode col
  IFS=, read -ra cs <<<"$5"
  for c in "${cs[@]}"; do
    out=$results/raw/r$round-tern-$tr-n$n-$c.txt
    mode=0 col=6
    [ "$c" = broadcast ] && mode=2 col=10
    echo "TERN_TRANSPORT=$tr tern run -n $n -- tern bench $c -s $list --target-ms $T --repeats $R -w 5 -a 3 -c 1 --inplace $mode" \
      >>"$results/runs.log"
    # the built-in selector, whatever tuning file this user may have (tern tune comes last)
    probed "$round" tern "$tr" "$n" "$c" "$out" env -u TERN_TUNING XDG_CACHE_HOME="$results/no-cache" TERN_TRANSPORT="$tr" \
      "$build/tern" run -n "$n" -- \
      "$build/tern" bench "$c" -s "$list" --target-ms "$T" --repeats "$R" -w 5 -a 3 -c 1 --inplace "$mode"
    awk -v c="$c" -v t="$col" '$1 ~ /^[0-9]+$/ && NF >= 13 { print c, $1, 0, $t, $(t + 2), $(t + 3) }' \
      "$out" >"$out.lines"
    record "$round" tern "$tr" "$n" "$out.lines"
  done
}

# a peer, one launch per collective as tern's: a launch spans one placement more often when short
run_peer() {
  local round=$1 peer=$2 n=$3 list=$4 out cmd tr=${2#*-} c cs
  local over=()
  [ "$n" -gt 2 ] && over=(--oversubscribe)
  local ompi=(mpirun.openmpi --allow-run-as-root "${over[@]}" -n "$n" --mca oob_tcp_if_include lo)
  case "$peer" in
    ompi-shm) cmd=("${ompi[@]}" "$bin/mpi_bench_ompi") ;;
    ompi-tcp) cmd=("${ompi[@]}" --mca pml ob1 --mca btl "tcp,self" --mca btl_tcp_if_include lo
                   "$bin/mpi_bench_ompi") ;;
    mpich-shm) cmd=(mpiexec.mpich -n "$n" "$bin/mpi_bench_mpich") ;;
    mpich-tcp) cmd=(env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp UCX_NET_DEVICES=lo mpiexec.mpich -n "$n"
                    "$bin/mpi_bench_mpich") ;;
    gloo) cmd=(env GLOO_SOCKET_IFNAME=lo "$py" "$here/gloo.py" -n "$n") tr=tcp ;;
  esac
  IFS=, read -ra cs <<<"$5"
  for c in "${cs[@]}"; do
    out=$results/raw/r$round-$peer-n$n-$c.txt
    local args=(-s "$list" -c "$c" -T "$T" -R "$R" -w 5)
    echo "${cmd[*]} ${args[*]}" >>"$results/runs.log"
    probed "$round" "${peer%-*}" "$tr" "$n" "$c" "$out" "${cmd[@]}" "${args[@]}"
    record "$round" "${peer%-*}" "$tr" "$n" "$out"
  done
}

# one (transport, n, sizes, collectives): every tool, starting at the round's offset
run_config() {
  local round=$1 tr=$2 n=$3 list=$4 which=$5 i k
  local tools=(tern ompi-"$tr" mpich-"$tr")
  [ "$tr" = tcp ] && tools+=(gloo)
  for ((i = 0; i < ${#tools[@]}; i++)); do
    k=${tools[$(((i + round) % ${#tools[@]}))]}
    echo "  round $round, $tr, n=$n: $k" >&2
    if [ "$k" = tern ]; then run_tern "$round" "$tr" "$n" "$list" "$which"
    else run_peer "$round" "$k" "$n" "$list" "$which"; fi
  done
}

measure() {
  rm -rf "$results"
  mkdir -p "$results/raw"
  echo "round,tool,transport,n,coll,bytes,iters,time_us,busbw_gbs,wrong" >"$results/raw.csv"
  echo "round,op,threads,bytes_per_thread,gbs_median,gbs_best" >"$results/membw.csv"
  echo "round,tool,transport,n,colls,c2c_before_ns,c2c_after_ns" >"$results/hoststate.csv"
  echo "round,bytes,us_per_message" >"$results/tcpfloor.csv"
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "mode: $mode (rounds $rounds, T $T ms, R $R)"
    echo "tern: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- src tools || echo ' + uncommitted changes')"
    echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), nproc $(nproc)"
    echo "kernel: $(uname -r)"
    echo "open mpi: $(dpkg-query -W -f='${Version}' openmpi-bin), mpich: $(dpkg-query -W -f='${Version}' mpich), torch: $(dpkg-query -W -f='${Version}' python3-torch)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$results/env.txt"
  local t0=$SECONDS round tr n s
  for ((round = 1; round <= rounds; round++)); do
    for s in "${membw_sizes[@]}"; do
      for threads in 2 1; do
        "$bin/membw" "$s" "$([ "$s" -gt 100000000 ] && echo 3 || echo 10)" "$threads" |
          awk -v r="$round" '{ print r "," $1 "," $2 "," $3 "," $4 "," $5 }' >>"$results/membw.csv"
      done
    done
    for s in "${tcpfloor_sizes[@]}"; do
      "$bin/tcpfloor" "$s" | awk -v r="$round" '{ print r "," $1 "," $2 }' >>"$results/tcpfloor.csv"
    done
    for n in "${ns[@]}"; do
      for tr in "${trs[@]}"; do run_config "$round" "$tr" "$n" "$sizes" "$(IFS=,; echo "${colls[*]}")"; done
    done
    echo "load after round $round: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/env.txt"
  done
  local main_R=$R
  R=$oversub_R
  for n in "${oversub_ns[@]}"; do
    for tr in shm tcp; do run_config 1 "$tr" "$n" "$oversub_sizes" "$oversub_colls"; done
  done
  R=$main_R
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/env.txt"
  echo "seconds: $((SECONDS - t0))" >>"$results/env.txt"
  [ "${TUNE_BUDGET:-60}" = 0 ] && return
  # the learned selection on this machine: tern tune's held-out accuracy (docs/TUNING.md)
  local cmd=("$build/tern" tune --budget "${TUNE_BUDGET:-60}" -o "$results/tuning")
  echo "\$ tern tune --budget ${TUNE_BUDGET:-60} -o results/tuning" >"$results/tune.txt"
  "${cmd[@]}" 2>&1 | tr '\r' '\n' | grep -v '^ *\[' | grep -v '^ *$' >>"$results/tune.txt" || true
}

[ "$mode" = plots ] || { build_all; measure; }
if [ "$mode" = quick ] || [ "$mode" = small ]; then
  "$py" "$here/aggregate.py" --results "$results"
else
  "$py" "$here/aggregate.py" --results "$results" --page "$here/PERFORMANCE.md.in" \
    --out "$root/docs/PERFORMANCE.md" --tuning "$here/results/tune.txt"
  "$py" "$here/plot.py" --results "$results" --out "$root/docs/perf"
fi
