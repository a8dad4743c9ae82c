#!/usr/bin/env bash
# kill_rank.sh TERN KILL_RANK COLL N VICTIM TRANSPORT: runs kill_rank (kill_rank.c) under
# `tern run` with TERN_TIMEOUT=5 and checks that `tern run` exits non-zero, that every survivor
# printed PASS (an error naming the victim and the operation within TERN_TIMEOUT + 2 s), and
# that the whole job ended in bounded time.
set -u
tern=$1 prog=$2 coll=$3 n=$4 victim=$5 transport=$6
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$SECONDS
TERN_TIMEOUT=5 TERN_TRANSPORT=$transport timeout -k 5 60 \
  "$tern" run -n "$n" --grace 10 -- "$prog" "$coll" "$victim" "$dir" >"$dir/out" 2>"$dir/err"
rc=$?
elapsed=$((SECONDS - start))
cat "$dir/out"
passes=$(grep -c '^PASS' "$dir/out")
fail=0
[ "$rc" -ne 0 ] || { echo "kill_rank.sh: tern run exited 0 although rank $victim was killed"; fail=1; }
[ "$elapsed" -lt 60 ] || { echo "kill_rank.sh: the job hung (stopped by timeout after ${elapsed}s)"; fail=1; }
[ "$passes" -eq $((n - 1)) ] || { echo "kill_rank.sh: $passes of $((n - 1)) survivors passed"; fail=1; }
grep -q "rank $victim .*killed by signal 9\|rank $victim .*signal 9" "$dir/err" ||
  { echo "kill_rank.sh: tern run did not report rank $victim killed"; fail=1; }
[ "$fail" -eq 0 ] || { echo "--- stderr"; tail -30 "$dir/err"; exit 1; }
echo "kill_rank.sh: $coll over $transport, $n ranks, rank $victim killed: all survivors told, job over in ${elapsed}s"
