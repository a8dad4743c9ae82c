#!/usr/bin/env bash
# run.sh OLD_TERN NEW_TERN [ROUNDS]: two builds of `tern` measured interleaved, so that load
# and CPU frequency hit both alike: `tern bench allreduce` over shared memory and TCP, 2 and 4
# ranks, 4 KiB, 256 KiB and 16 MiB, ROUNDS rounds (default 8) of old then new. Prints one
# markdown row a cell: the medians with their range and new/old. Raw lines go to stderr.
# Used to show that a refactor is no slower (docs/perf/layers.md).
set -euo pipefail
old=${1:?usage: run.sh OLD_TERN NEW_TERN [ROUNDS]} new=${2:?usage: run.sh OLD_TERN NEW_TERN [ROUNDS]}
rounds=${3:-8}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for round in $(seq "$rounds"); do
  for which in old new; do
    bin=$old
    [ "$which" = new ] && bin=$new
    for tr in shm tcp; do
      for n in 2 4; do
        TERN_TRANSPORT=$tr "$bin" run -n "$n" -- "$bin" bench allreduce -s 4K,256K,16M -n 20 -w 5 \
          --inplace 0 | awk -v w="$which" -v tr="$tr" -v n="$n" '/^ *[0-9]/ { print w, tr, n, $1, $6 }'
      done
    done
  done
done | tee /dev/stderr >"$raw"
/usr/bin/python3 - "$raw" <<'PY'
import collections, statistics, sys
cells = collections.defaultdict(list)
for line in open(sys.argv[1]):
    which, tr, n, size, us = line.split()
    cells[(tr, int(n), int(size), which)].append(float(us))
print("| transport | ranks | bytes | old median us [min-max] | new median us [min-max] | new/old |")
print("|---|---:|---:|---|---|---:|")
for key in sorted({k[:3] for k in cells}):
    o, w = cells[key + ("old",)], cells[key + ("new",)]
    print("| %s | %d | %d | %.1f [%.1f-%.1f] | %.1f [%.1f-%.1f] | %.2f |" % (
        key + (statistics.median(o), min(o), max(o), statistics.median(w), min(w), max(w),
               statistics.median(w) / statistics.median(o))))
PY
