#!/usr/bin/env bash
# shm_calibrate.sh TERN HELLO: at start-up the two lowest ranks of a host time the rings against
# single copy, one way and exchanged, and the host's ranks follow the verdicts
# (src/comm/shm_calibrate.c): rank 0 logs the times and verdicts at INFO, the others the same
# verdicts at DEBUG, also with more ranks than cores. With TERN_SHM_CMA set, nobody times.
set -euo pipefail
tern=$1 hello=$2
fail() { echo "shm_calibrate.sh: $1"; echo "--- log"; echo "$err" | tail -20; exit 1; }
# timed: rank 0 logs both patterns' times and verdicts, and rank 1 follows them; on an
# oversubscribed host (more ranks than cores) too, where every rank follows them
timed() {
  local n=$1 way exch one other r
  err=$(TERN_TRANSPORT=shm TERN_DEBUG=DEBUG "$tern" run -n "$n" -- "$hello" 2>&1 >/dev/null)
  for pattern in "one way" exchanged; do
    grep -qE "r0 .*shared memory on this host, $pattern: single copy (kept|off) \(a 256 KiB message, (and its reply|each way): through the rings [0-9.]+ us, single copy [0-9.]+ us\)" <<<"$err" ||
      fail "n = $n: rank 0 did not log the timing ($pattern)"
  done
  way=$(grep -E "r0 .*host, one way: single copy" <<<"$err" | sed -E 's/.*single copy (kept|off).*/\1/')
  exch=$(grep -E "r0 .*host, exchanged: single copy" <<<"$err" | sed -E 's/.*single copy (kept|off).*/\1/')
  for r in $(seq 1 $((n - 1))); do
    grep -qE "r$r .*single copy $way one way and $exch exchanged for this host's peers, as rank 0 timed it" <<<"$err" ||
      fail "n = $n: rank $r did not follow rank 0's verdict ($way one way, $exch exchanged)"
  done
  echo "shm_calibrate.sh: n = $n: single copy $way one way, $exch exchanged"
}
[ "$(nproc)" -lt 2 ] || timed 2
timed $(($(nproc) + 1))
for cma in 0 1; do
  err=$(TERN_SHM_CMA=$cma TERN_TRANSPORT=shm TERN_DEBUG=DEBUG "$tern" run -n 2 -- "$hello" 2>&1 >/dev/null)
  ! grep -q "shared memory on this host\|for this host's peers" <<<"$err" ||
    fail "TERN_SHM_CMA=$cma, and still timed"
done
echo "shm_calibrate.sh: TERN_SHM_CMA set skips the timing"
