#!/usr/bin/env bash
# debug_log.sh TERN HELLO: TERN_DEBUG=INFO names the transport and algorithm of each operation,
# TRACE adds every step, WARN (the default) prints nothing on a healthy run, and nothing goes to
# stdout but the program's own lines.
set -euo pipefail
tern=$1 hello=$2
for transport in shm tcp; do
  err=$(TERN_TRANSPORT=$transport TERN_DEBUG=INFO "$tern" run -n 2 -- "$hello" 2>&1 >/dev/null)
  grep -qE "allreduce #0: 4 elements of f32 \(sum\), [a-z]+ over $transport" <<<"$err" ||
    { echo "debug_log.sh: INFO did not name algorithm and transport ($transport):"; echo "$err"; exit 1; }
  err=$(TERN_TRANSPORT=$transport TERN_DEBUG=TRACE "$tern" run -n 2 -- "$hello" 2>&1 >/dev/null)
  grep -qE "allreduce #0 phase 0: (send|recv)" <<<"$err" ||
    { echo "debug_log.sh: TRACE showed no steps ($transport):"; echo "$err"; exit 1; }
  awk '/r[01] .* TRACE allreduce #0 phase/ && n++ < 4' <<<"$err" # reads it all: no SIGPIPE
done
out=$("$tern" run -n 2 -- "$hello" 2>"${TMPDIR:-/tmp}/debug_log.$$")
quiet=$(cat "${TMPDIR:-/tmp}/debug_log.$$"); rm -f "${TMPDIR:-/tmp}/debug_log.$$"
[ -z "$quiet" ] || { echo "debug_log.sh: a healthy run logged at WARN: $quiet"; exit 1; }
[ "$(echo "$out" | grep -vc '^rank ')" -eq 0 ] || { echo "debug_log.sh: stdout has more than the program's lines"; exit 1; }
echo "debug_log.sh: INFO and TRACE say what they should, WARN is silent"
