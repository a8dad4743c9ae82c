#!/usr/bin/env bash
# kill_mid_step.sh TERN PYTHON N VICTIM: runs kill_mid_step.py on N ranks under `tern run` with
# TERN_TIMEOUT=10; rank VICTIM SIGKILLs itself mid-backward. Holds when tern run exits non-zero,
# reports the victim killed, every survivor printed PASS (it caught a tern.TernError), and all of
# it ended well within the timeout (no survivor waited for its deadline).
set -u
tern=$1 python=$2 n=$3 victim=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$SECONDS
TERN_TIMEOUT=10 timeout -k 5 90 "$tern" run -n "$n" -- "$python" "$(dirname "$0")/kill_mid_step.py" \
  "$victim" 5 >"$out" 2>&1
rc=$?
elapsed=$((SECONDS - start))
grep -E '^(PASS|FAIL)|tern run:' "$out"
fail=0
[ "$rc" -ne 0 ] || { echo "kill_mid_step.sh: tern run exited 0 although rank $victim was killed"; fail=1; }
grep -q "rank $victim killed by signal 9" "$out" || { echo "kill_mid_step.sh: no report of rank $victim killed"; fail=1; }
passes=$(grep -c '^PASS' "$out")
[ "$passes" -eq $((n - 1)) ] || { echo "kill_mid_step.sh: $passes of $((n - 1)) survivors raised TernError"; fail=1; }
# python and torch take a few seconds to start; the survivors must not sit out TERN_TIMEOUT
[ "$elapsed" -lt 40 ] || { echo "kill_mid_step.sh: took ${elapsed}s"; fail=1; }
[ "$fail" -eq 0 ] || { echo "--- output"; tail -40 "$out"; echo "0 passed, 1 failed"; exit 1; }
echo "kill_mid_step.sh: $n ranks, rank $victim killed mid-step: every survivor raised TernError in ${elapsed}s"
echo "1 passed, 0 failed"
