#!/usr/bin/env bash
# kill_mid_step_backend.sh PYTHON N: kill_mid_step_backend.py on N ranks (torchrun's variables,
# KEEP_GOING so that the survivors report after the victim dies); holds when every survivor
# printed PASS within the time a dead rank is noticed in (not TERN_TIMEOUT).
set -u
py=$1 n=$2
start=$SECONDS
out=$(KEEP_GOING=1 TIMEOUT=90 TERN_TIMEOUT=30 "$py" "$(dirname "$0")/torchrun_env.py" "$n" \
      "$(dirname "$0")/kill_mid_step_backend.py" 2>&1)
echo "$out" | grep -E '^(PASS|FAIL)'
passes=$(echo "$out" | grep -c '^PASS')
if [ "$passes" -ne $((n - 1)) ] || [ $((SECONDS - start)) -ge 60 ]; then
  echo "$out" | tail -30
  echo "kill_mid_step_backend.sh: $passes of $((n - 1)) survivors passed in $((SECONDS - start)) s"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"
