#!/usr/bin/env bash
# mismatch.sh TERN PROG WHAT N TRANSPORT: the ranks of a job that disagree on WHAT must all
# return from their call, each one that receives with an error, at least one naming the
# disagreement, long before TERN_TIMEOUT.
set -u
tern=$1 prog=$2 what=$3 n=$4 transport=$5
# A root disagreement can leave every rank waiting to receive, with no message to compare: then
# the deadline is what tells them, so that case runs with a short TERN_TIMEOUT and expects it.
timeout_s=60
[ "$what" = root ] && timeout_s=3
start=$SECONDS
out=$(TERN_TIMEOUT=$timeout_s TERN_TRANSPORT=$transport timeout -k 5 50 "$tern" run -n "$n" -- "$prog" "$what" 2>&1)
rc=$?
echo "$out"
elapsed=$((SECONDS - start))
[ "$(echo "$out" | grep -c '^rank ')" -eq "$n" ] || { echo "mismatch.sh: not every rank returned (exit $rc)"; exit 1; }
[ "$(echo "$out" | grep '^rank ' | grep -vc TERN_OK)" -ge $((n - 1)) ] ||
  { echo "mismatch.sh: a receiving rank's call succeeded"; exit 1; }
[ "$elapsed" -lt 20 ] || { echo "mismatch.sh: took ${elapsed}s: a rank waited instead of being told"; exit 1; }
echo "$out" | grep -qE "must agree|different operations|timed out after $timeout_s" ||
  { echo "mismatch.sh: no rank named the disagreement"; exit 1; }
echo "mismatch.sh: $what over $transport: all $n ranks told in ${elapsed}s"
