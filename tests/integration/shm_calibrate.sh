#!/usr/bin/env bash
# shm_calibrate.sh TERN HELLO: at start-up the two lowest ranks of a host time the rings against
# single copy, and the host's ranks follow the verdict (src/comm/shm_calibrate.c): rank 0 logs
# both times and the verdict at INFO, rank 1 the same verdict at DEBUG. With TERN_SHM_CMA set,
# or more ranks than cores, nobody times.
set -euo pipefail
tern=$1 hello=$2
fail() { echo "shm_calibrate.sh: $1"; echo "--- log"; echo "$err" | tail -20; exit 1; }
if [ "$(nproc)" -ge 2 ]; then
  err=$(TERN_TRANSPORT=shm TERN_DEBUG=DEBUG "$tern" run -n 2 -- "$hello" 2>&1 >/dev/null)
  line=$(grep -E "r0 .*shared memory on this host: single copy (kept|off) \(a 256 KiB message and its reply: through the rings [0-9.]+ us, single copy [0-9.]+ us\)" <<<"$err") ||
    fail "rank 0 did not log the timing"
  verdict=$(sed -E 's/.*single copy (kept|off).*/\1/' <<<"$line")
  grep -qE "r1 .*single copy $verdict for this host's peers, as rank 0 timed it" <<<"$err" ||
    fail "rank 1 did not follow rank 0's verdict ($verdict)"
  echo "shm_calibrate.sh: ${line#*INFO }"
fi
for cma in 0 1; do
  err=$(TERN_SHM_CMA=$cma TERN_TRANSPORT=shm TERN_DEBUG=DEBUG "$tern" run -n 2 -- "$hello" 2>&1 >/dev/null)
  ! grep -q "shared memory on this host\|for this host's peers" <<<"$err" ||
    fail "TERN_SHM_CMA=$cma, and still timed"
done
err=$(TERN_TRANSPORT=shm TERN_DEBUG=DEBUG "$tern" run -n $(($(nproc) + 1)) -- "$hello" 2>&1 >/dev/null)
! grep -q "shared memory on this host" <<<"$err" || fail "timed on an oversubscribed host"
echo "shm_calibrate.sh: TERN_SHM_CMA and an oversubscribed host skip the timing"
