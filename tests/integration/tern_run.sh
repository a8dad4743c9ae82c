#!/usr/bin/env bash
# tern_run.sh CASE TERN RANK: one integration test of `tern run` and of the launch environment
# under the other launchers. TERN is the tern command, RANK the tern_test_rank program (rank.c).
# Exits 0 when the case holds, 77 (skipped) when the launcher it needs is not installed.
# Every run is under `timeout`, so a hang fails the test instead of stalling the suite.
set -u
case=$1
tern=$2
rank=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail() {
  echo "FAIL $case: $*"
  echo "--- what the run printed:"
  cat "$out"
  exit 1
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# less A B: A < B for decimals
less() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# run CMD...: runs CMD with a hang guard; sets rc and secs
run() {
  local t0
  t0=$(now)
  timeout -k 5 60 "$@" >"$out" 2>&1
  rc=$?
  secs=$(elapsed "$t0")
}

expect_rc() { [ "$rc" -eq "$1" ] || fail "exit code $rc, want $1"; }
expect_line() { grep -q -- "$1" "$out" || fail "no line says '$1'"; }
expect_count() {
  local n
  n=$(grep -c -- "$1" "$out")
  [ "$n" -eq "$2" ] || fail "$n lines say '$1', want $2"
}

# signal_case SIG CODE: two ranks wait for a signal; tern run gets SIG once both are ready and
# must forward it, and exit with CODE
signal_case() {
  local sig=$1 want=$2 t0
  "$tern" run -n 2 -- "$rank" signal >"$out" 2>&1 &
  local pid=$!
  t0=$(now)
  until [ "$(grep -c ready "$out")" -eq 2 ]; do
    less "$(elapsed "$t0")" 20 || { kill -KILL $pid; fail "the ranks never got ready"; }
    sleep 0.05
  done
  kill -"$sig" $pid
  t0=$(now)
  while kill -0 $pid 2>/dev/null; do
    less "$(elapsed "$t0")" 20 || { kill -KILL $pid; fail "tern run did not end after $sig"; }
    sleep 0.05
  done
  wait $pid
  rc=$?
  expect_rc "$want"
  expect_line "forwarding"
  expect_line "rank 0 got SIG$sig"
  expect_line "rank 1 got SIG$sig"
}

# by_hand NAME VARS...: three ranks started by this script with per-rank variables, where
# VARS may use $r for the rank
by_hand() {
  local source=$1 vars=$2 pids=() r
  for r in 0 1 2; do
    eval "env $vars timeout -k 5 60 \"$rank\" meet" >>"$out" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a rank failed"; done
  expect_count "met all ($source)" 3
}

case $case in
  all_ranks_exit_zero)
    run "$tern" run -n 4 -- "$rank" meet
    expect_rc 0
    expect_count "met all (TERN_RANK)" 4 ;;
  with_a_key)
    TERN_KEY=sesame run "$tern" run -n 3 -- "$rank" meet
    expect_rc 0
    expect_count "met all (TERN_RANK)" 3 ;;
  one_rank_exits_3_others_told)
    run "$tern" run -n 3 --grace 10 -- "$rank" fail 1 3
    expect_rc 3
    expect_line "rank 0 told: TERN_ERR_PEER_LOST.*rank 1 lost: exited with code 3"
    expect_line "rank 2 told: TERN_ERR_PEER_LOST.*rank 1 lost: exited with code 3"
    less "$secs" 8 || fail "took $secs s: the others were not told at once" ;;
  one_rank_exits_3_others_ended)
    run "$tern" run -n 3 --grace 1 -- "$rank" hang 1 3
    expect_rc 3
    expect_count "sleeping" 2
    expect_line "SIGTERM"
    less "$secs" 5 || fail "took $secs s for a grace of 1 s" ;;
  sigkill_after_sigterm_is_ignored)
    run "$tern" run -n 2 --grace 0.5 -- "$rank" deaf 1 3
    expect_rc 3
    expect_line "SIGKILL"
    less 2.4 "$secs" || fail "SIGKILL came after $secs s, before grace + 2 s"
    less "$secs" 7 || fail "took $secs s" ;;
  rank_sigkilled_others_told)
    run "$tern" run -n 3 -- "$rank" kill 2
    expect_rc 137
    expect_line "rank 0 told: lost rank 2: rank 2 lost: killed by signal 9"
    expect_line "rank 1 told: lost rank 2: rank 2 lost: killed by signal 9" ;;
  forwards_sigterm) signal_case TERM 143 ;;
  forwards_sigint) signal_case INT 130 ;;
  missing_program)
    run "$tern" run -n 2 -- /nonexistent/tern-test-program
    expect_rc 127
    expect_line "rank 0 could not be started: /nonexistent/tern-test-program" ;;
  usage_errors)
    for args in "" "-n 0 -- true" "-n 2" "-n x -- true" "--grace -1 -n 2 -- true" "-q"; do
      # shellcheck disable=SC2086
      run "$tern" run $args
      expect_rc 2
    done
    run "$tern" run --help
    expect_rc 0
    expect_line "usage: tern run -n N" ;;
  torchrun_variables)
    port=$("$rank" freeport)
    by_hand torchrun "RANK=\$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port" ;;
  slurm_variables_one_node)
    by_hand Slurm "SLURM_PROCID=\$r SLURM_NTASKS=3 SLURM_LOCALID=\$r SLURM_NODEID=0 \
      SLURM_STEP_TASKS_PER_NODE=3 SLURM_STEP_NUM_NODES=1 SLURM_JOB_ID=$$ SLURM_STEP_ID=0" ;;
  openmpi_one_host)
    command -v mpiexec.openmpi >/dev/null || { echo "no mpiexec.openmpi: skipped"; exit 77; }
    run mpiexec.openmpi --allow-run-as-root --oversubscribe -n 3 "$rank" meet
    expect_rc 0
    expect_count "met all (Open MPI)" 3 ;;
  mpich_one_host)
    command -v mpiexec.mpich >/dev/null || { echo "no mpiexec.mpich: skipped"; exit 77; }
    run mpiexec.mpich -n 3 "$rank" meet
    expect_rc 0
    expect_count "met all (MPICH)" 3 ;;
  binds_ranks_round_robin)
    # on CPUs 0 and 1 only, 5 ranks: rank r on CPU r mod 2 alone; --bind none leaves both
    taskset -c 0,1 true 2>/dev/null || { echo "needs CPUs 0 and 1: skipped"; exit 77; }
    where='echo "rank $TERN_RANK on $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'
    run taskset -c 0,1 "$tern" run -n 5 -- sh -c "$where"
    expect_rc 0
    for r in 0 1 2 3 4; do expect_line "^rank $r on $((r % 2))\$"; done
    run taskset -c 0,1 "$tern" run -n 5 --bind none -- sh -c "$where"
    expect_rc 0
    expect_count "on 0-1\$" 5 ;;
  sets_torchrun_variables_and_tags_output)
    # torchrun's variables beside TERN_*, MASTER_PORT apart from the store's; every line of a
    # rank's stdout and stderr after its tag, a last line without a newline too
    show='echo "RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK MASTER_ADDR=$MASTER_ADDR"; echo "store=${TERN_STORE##*:} master=$MASTER_PORT"; echo oops >&2; printf tail'
    run "$tern" run -n 3 --tag-output -- sh -c "$show"
    expect_rc 0
    for r in 0 1 2; do
      expect_line "^\[1,$r\]<stdout>:RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 MASTER_ADDR=127.0.0.1\$"
      expect_line "^\[1,$r\]<stderr>:oops\$"
      expect_line "^\[1,$r\]<stdout>:tail\$"
    done
    ports=$(sed -n 's/.*store=\([0-9]*\) master=\([0-9]*\)$/\1 \2/p' "$out")
    [ "$(echo "$ports" | awk '$1 != $2 && $2 != ""' | wc -l)" -eq 3 ] ||
      fail "MASTER_PORT is the store's port, or unset: $ports" ;;
  *) echo "tern_run.sh: no case '$case'"; exit 2 ;;
esac
echo "ok $case (${secs:-?} s)"
