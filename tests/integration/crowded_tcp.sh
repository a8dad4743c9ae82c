#!/usr/bin/env bash
# crowded_tcp.sh TERN: over TCP with more ranks than CPUs on one host (tern run under taskset, one
# CPU), a large broadcast leaves the chain pipeline, whose stages cannot overlap there, on every
# rank. With one CPU the whole work decides (select.c, work.c): the tree sends the same bytes as
# halving-doubling in 3 messages instead of 8 (4 MiB, interleaved, 2026-12-05: tree 3.07 and
# 2.63 ms, rhd 3.52 and 2.95). With the ranks on two (pretend) hosts each host would judge its
# own crowding, so the crowded model is not used and the chain stays.
set -u
tern=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# algo HOSTS: the algorithm every rank names for the 4 MiB broadcast (one line per rank)
algo() {
  TERN_HOSTS=$1 TERN_TRANSPORT=tcp TERN_DEBUG=INFO TERN_TIMEOUT=60 timeout -k 5 120 \
    taskset -c 0 "$tern" run -n 4 -- "$tern" bench broadcast -s 4M -n 1 -w 0 -c 1 --inplace 2 >"$out" 2>&1 ||
    { echo "FAIL: TERN_HOSTS='$1' exited $?"; cat "$out"; exit 1; }
  grep -q '^# Out of bounds values : 0 OK' "$out" || { echo "FAIL: wrong elements"; cat "$out"; exit 1; }
  grep -oE 'broadcast #0: [0-9]+ elements of f32 \(sum\), [a-z]+ over' "$out" | awk '{print $(NF-1)}' | tr -d ,
}

one=$(algo "" | sort | uniq -c | awk '{print $1, $2}')
[ "$one" = "4 tree" ] || { echo "FAIL: one crowded host: '$one', want all 4 ranks on tree"; cat "$out"; exit 1; }
two=$(algo 2 | sort | uniq -c | awk '{print $1, $2}')
[ "$two" = "4 ring" ] || { echo "FAIL: two hosts: '$two', want all 4 ranks on ring"; cat "$out"; exit 1; }
echo "ok: crowded host tree, two hosts ring"
