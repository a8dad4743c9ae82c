#!/usr/bin/env bash
# mismatch.sh TERN PROG WHAT N TRANSPORT [COUNT]: the ranks of a job that disagree on WHAT (see
# mismatch.c) must all return from their call, all but at most one with an error, at least one
# naming the disagreement, long before TERN_TIMEOUT: the messages carry what the ranks must agree
# on, roots included, so no rank waits for the deadline to learn it.
set -u
tern=$1 prog=$2 what=$3 n=$4 transport=$5 count=${6:-2000}
start=$SECONDS
out=$(TERN_TIMEOUT=60 TERN_TRANSPORT=$transport timeout -k 5 50 "$tern" run -n "$n" -- "$prog" "$what" "$count" 2>&1)
rc=$?
echo "$out"
elapsed=$((SECONDS - start))
[ "$(echo "$out" | grep -c '^rank ')" -eq "$n" ] || { echo "mismatch.sh: not every rank returned (exit $rc)"; exit 1; }
[ "$(echo "$out" | grep '^rank ' | grep -vc TERN_OK)" -ge $((n - 1)) ] ||
  { echo "mismatch.sh: a receiving rank's call succeeded"; exit 1; }
[ "$elapsed" -lt 20 ] || { echo "mismatch.sh: took ${elapsed}s: a rank waited instead of being told"; exit 1; }
echo "$out" | grep -qE "must agree|different operations" ||
  { echo "mismatch.sh: no rank named the disagreement"; exit 1; }
echo "mismatch.sh: $what of $count over $transport: all $n ranks told in ${elapsed}s"
