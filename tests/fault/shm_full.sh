#!/usr/bin/env bash
# shm_full.sh TERN: a /dev/shm too small for the rings (a 2 MiB tmpfs mounted over it in a mount
# namespace of this test's own; 4 ranks need about 3 MiB each) is an error from every rank within
# seconds, the ranks that tried to reserve naming /dev/shm and what to do (a rank still on its
# way there may hear first from the store that a peer failed): not a SIGBUS, not a hang.
set -u
tern=$1
[ "$(id -u)" -eq 0 ] ||
  { echo "shm_full.sh: needs root for a mount namespace: skipped" >&2; exit 77; }
start=$SECONDS
out=$(unshare -m bash -c 'mount -t tmpfs -o size=2m tmpfs /dev/shm &&
  TERN_TRANSPORT=shm TERN_TIMEOUT=20 timeout -k 5 40 \
    "$0" run -n 4 -- "$0" bench allreduce -s 8 -n 1 -w 0' "$tern" 2>&1)
rc=$?
echo "$out"
elapsed=$((SECONDS - start))
[ "$rc" -ne 0 ] || { echo "shm_full.sh: the job succeeded with a 2 MiB /dev/shm"; exit 1; }
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { echo "shm_full.sh: the job hung (exit $rc)"; exit 1; }
echo "$out" | grep -q "Bus error" && { echo "shm_full.sh: a rank died of SIGBUS"; exit 1; }
failed=$(echo "$out" | grep -c "^tern bench: TERN_ERR_")
[ "$failed" -eq 4 ] || { echo "shm_full.sh: $failed of 4 ranks reported an error"; exit 1; }
echo "$out" | grep "^tern bench:" | grep -q "per other rank on its host in /dev/shm" ||
  { echo "shm_full.sh: no rank named /dev/shm"; exit 1; }
[ "$elapsed" -lt 15 ] || { echo "shm_full.sh: took ${elapsed}s"; exit 1; }
echo "shm_full.sh: all 4 ranks failed cleanly in ${elapsed}s"
