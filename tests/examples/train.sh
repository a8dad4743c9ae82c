#!/usr/bin/env bash
# train.sh CASE TERN TRAIN: end-to-end cases of the C trainer (examples/train/) and `tern demo`.
# TERN is the tern command, TRAIN the tern_train example. Each case prints what it saw and exits
# 0 when it holds.
#   train_N_TRANSPORT  tern_train on N ranks: exit 0, held-out accuracy >= MIN_ACC %, the
#                      in-program check says bit-identical, and every rank printed the same hash
#   demo               `tern demo` as `make demo` runs it: the progress line's fields, a summary
#                      with bit-identical weights and the accuracy, all within 120 s
#                      and the swarm phase: a peer killed, one joining, every live peer's
#                      held-out accuracy reported (the demo itself fails under 90%)
#   demo_tcp           the first phase over TCP, fewer epochs
#   bad_data           a data file with a bad line: exit 1, the message names the file and line
#   usage              bad options: exit 2 with a message
set -u
case=$1 tern=$2 train=$3
MIN_ACC=95
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$dir/out

fail() {
  echo "FAIL $case: $*"
  echo "--- output"; cat "$out"
  exit 1
}

run() {
  local t0=$SECONDS
  timeout -k 5 150 "$@" >"$out" 2>&1
  rc=$?
  secs=$((SECONDS - t0))
  cat "$out"
}

# The accuracy in "held-out accuracy 98.9%" must reach MIN_ACC.
expect_accuracy() {
  local acc
  acc=$(grep -o 'held-out accuracy [0-9.]*%' "$out" | grep -o '[0-9.]*' | head -1)
  [ -n "$acc" ] || fail "no held-out accuracy printed"
  awk -v a="$acc" -v m="$MIN_ACC" 'BEGIN { exit !(a >= m) }' || fail "held-out accuracy $acc% < $MIN_ACC%"
}

expect() { grep -qE -- "$1" "$out" || fail "no line matches '$1'"; }

train_case() {
  local n=$1 transport=$2 hashes
  TERN_TRANSPORT=$transport TERN_TIMEOUT=30 run "$tern" run -n "$n" -- "$train" --epochs 15
  [ "$rc" -eq 0 ] || fail "exit code $rc"
  expect_accuracy
  expect "on $n ranks?; weights bit-identical on every rank"
  [ "$(grep -c '^rank [0-9]* weights fnv1a' "$out")" -eq "$n" ] || fail "not every rank printed its hash"
  hashes=$(grep '^rank [0-9]* weights fnv1a' "$out" | awk '{ print $5 }' | sort -u | wc -l)
  [ "$hashes" -eq 1 ] || fail "the ranks printed $hashes different hashes"
  echo "train.sh: $n ranks over $transport: identical weights, accuracy reached"
}

case $case in
  train_1_shm) train_case 1 shm ;;
  train_2_shm) train_case 2 shm ;;
  train_4_shm) train_case 4 shm ;;
  train_3_tcp) train_case 3 tcp ;;
  train_5_tcp) train_case 5 tcp ;;
  demo)
    run "$tern" demo
    [ "$rc" -eq 0 ] || fail "exit code $rc"
    [ "$secs" -lt 120 ] || fail "took ${secs}s, over 2 minutes"
    expect '^  epoch  40/40  loss [0-9.]+  held-out +[0-9.]+%  +[0-9]+ samples/s +[0-9.]+ [KMG]B moved  allreduce [a-z]+/shm$'
    expect 'weights bit-identical on all 4 ranks'
    expect '^phase 2 done: 30 rounds in [0-9.]+ s; peer 3 killed at round [0-9]+, peer 4 joined at round [0-9]+$'
    expect '^  peer 4 \(shard 3\): [0-9]+ rounds, held-out accuracy [0-9.]+%'
    expect '^  [0-9]+ peer-rounds lost a group member and finished without it$'
    expect '^next: docs/DEMO.md'
    expect_accuracy
    echo "train.sh: the demo ran in ${secs}s" ;;
  demo_tcp)
    run "$tern" demo --transport tcp --epochs 10 --only collectives
    [ "$rc" -eq 0 ] || fail "exit code $rc"
    expect 'allreduce [a-z]+/tcp$'
    expect 'weights bit-identical on all 4 ranks' ;;
  bad_data)
    cp "$(dirname "$0")/../../lib/digits/data/digits.csv" "$dir/digits.csv"
    sed -i '100s/,[0-9]*$/,12/' "$dir/digits.csv"
    run "$tern" run -n 2 -- "$train" --data "$dir/digits.csv"
    [ "$rc" -eq 1 ] || fail "exit code $rc, want 1"
    expect "digits.csv:100: field 65 \(the label\): '12' is not a number in 0..9"
    run "$tern" run -n 2 -- "$train" --data "$dir/none.csv"
    [ "$rc" -eq 1 ] || fail "exit code $rc, want 1"
    expect "none.csv: No such file" ;;
  usage)
    run "$tern" demo --epochs 0
    [ "$rc" -eq 2 ] || fail "demo --epochs 0: exit code $rc, want 2"
    expect "tern demo: --epochs '0'"
    run "$tern" demo --transport carrier-pigeon
    [ "$rc" -eq 2 ] || fail "demo --transport: exit code $rc, want 2"
    run "$tern" run -n 1 -- "$train" --epochs many
    [ "$rc" -eq 2 ] || fail "tern_train --epochs many: exit code $rc, want 2"
    expect "tern_train: --epochs 'many': not a number" ;;
  *) echo "train.sh: no case '$case'"; exit 2 ;;
esac
exit 0
