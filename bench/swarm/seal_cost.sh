#!/usr/bin/env bash
# seal_cost.sh TERN DIM [TERN SWARM OPTIONS...]: 4 `tern swarm` peers on 127.0.0.1 average DIM
# floats in one group for 10 rounds; prints how many of the 40 peer-rounds were full groups and
# the median averaging time. docs/SWARM.md ("Security") compares `--key s3cret` (every message
# sealed, src/swarm/seal.c) with no key:
#   for k in "" "--key s3cret" "" "--key s3cret"; do bench/swarm/seal_cost.sh build/tern 1048576 $k; done
set -eu
TERN=$1 DIM=$2
shift 2
W=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$W"' EXIT
args=(--run-id "cost-$$" --rounds 10 --dim "$DIM" --target-group 4 --min-group 4 --match-timeout 8
      --timeout 20 "$@")
"$TERN" swarm --listen 127.0.0.1:0 "${args[@]}" --value 0 >"$W/p0.out" 2>"$W/p0.err" &
pids=($!)
A=
for _ in $(seq 100); do
  A=$(awk '/listening on/ { print $5; exit }' "$W/p0.out")
  [ -n "$A" ] && break
  sleep 0.1
done
[ -n "$A" ] || { echo "the first peer did not start" >&2; exit 1; }
for i in 1 2 3; do
  "$TERN" swarm --listen 127.0.0.1:0 --join "$A" "${args[@]}" --value "$i" >"$W/p$i.out" 2>"$W/p$i.err" &
  pids+=($!)
done
wait "${pids[@]}"
echo "full groups: $(cat "$W"/p*.out | grep -c '^round .* group 4 ') of 40 peer-rounds"
grep -h '^round' "$W"/p*.out | sed 's/.*averaging \([0-9.]*\) s.*/\1/' | sort -n |
  awk '{ a[NR] = $1 } END { print "median averaging", a[int((NR + 1) / 2)], "s" }'
