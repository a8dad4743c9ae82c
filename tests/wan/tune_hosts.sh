#!/usr/bin/env bash
# tune_hosts.sh TERN: `tern tune` across namespace hosts (nshosts.sh: each its own network
# namespace and hostname, so shared memory within one, TCP across), then the selector using what
# it wrote.
#
#   1. 3 hosts x 2 ranks, one `tern run --nnodes 3 --node-rank H -n 2 -- tern tune` per host, as
#      ssh or srun would start them: the file (written by rank 0) must have rows at 3x2, hier by
#      ring and by rhd among them, and its held-out scores; the saved rows must hold every
#      algorithm of allreduce, hier:ring and hier:rhd included, at each size measured;
#   2. `tern bench allreduce` on the same hosts with TERN_TUNING=that file and TERN_DEBUG=INFO:
#      at every size, rank 0's log must say the tuning file chose, and name an algorithm whose
#      time in the file at that size is the least there (ties: any of them).
# A file that keeps the built-in model (`use builtin`: the table did not score above it here)
# is switched to `use table` for step 2, said on stdout: step 2 tests the selector's use of the
# rows, whatever this machine's load made of the scores. Needs root (exit 77 without it).
set -euo pipefail

tern=${1:?usage: tune_hosts.sh TERN}
# shellcheck source=tests/wan/nshosts.sh
. "$(dirname "$0")/nshosts.sh"
nsh_need tune_hosts.sh
nsh_up tunehosts 3 1 83
fail() { echo "FAIL: $*"; exit 1; }

# on_hosts NAME CMD...: `tern run --nnodes 3 --node-rank H -n 2 -- CMD` on each host H, waited
# for; host H's output in $state/NAME.H.
port=29700
on_hosts() {
  local name=$1 h ok=1
  shift
  port=$((port + 1))
  pids=()
  for h in 0 1 2; do
    nsh_spawn "$h" "tunehost$h" env TERN_TIMEOUT=40 timeout -k 5 50 "$tern" run --nnodes 3 \
      --node-rank "$h" --master "10.83.0.1:$port" -n 2 -- "$@" >"$state/$name.$h" 2>&1
  done
  for h in 0 1 2; do wait "${pids[$h]}" || ok=0; done
  pids=()
  [ "$ok" -eq 1 ] || { tail -5 "$state/$name".*; fail "$name: a host's tern run failed"; }
}

on_hosts tune "$tern" tune --budget 20 --max-bytes 64K -o "$state/tuning" \
  --save-rows "$state/rows"
tr '\r' '\n' <"$state/tune.0" | grep -A4 "held-out accuracy" | sed 's/^/tune: /'
[ -s "$state/tuning" ] || fail "no tuning file written"
for algo in hier:ring hier:rhd; do
  grep -q "^time tcp 3x2 allreduce .* $algo " "$state/tuning" ||
    fail "the file has no 3x2 rows of $algo: $(head -12 "$state/tuning")"
done
grep -q "^time tcp [0-9]* " "$state/tuning" && fail "rows of one host in a run across hosts"
# every allreduce algorithm across hosts at every size measured
awk -F, '$2 == "3x2" && $3 == "allreduce" { algos[$5] = 1; n[$4]++ }
  END { for (a in algos) k++; for (c in n) if (n[c] != k) exit 1; exit !(k >= 6) }' \
  "$state/rows" || fail "the saved rows miss algorithms at some size: $(grep -c . "$state/rows") rows"
echo "tune: $(grep -c '^time tcp 3x2 ' "$state/tuning") rows at 3x2, $(grep '^use ' "$state/tuning")"
if grep -q '^use builtin' "$state/tuning"; then
  sed -i 's/^use builtin/use table/' "$state/tuning"
  echo "tune: the file keeps the built-in model here; step 2 runs it as 'use table'"
fi

# the largest allreduce measured: the sizes the bench asks for are all in the file
top=$(awk '$1 == "time" && $3 == "3x2" && $4 == "allreduce" && $5 > m { m = $5 } END { print m }' \
  "$state/tuning")
on_hosts bench env TERN_TUNING="$state/tuning" TERN_DEBUG=INFO "$tern" bench allreduce -b 8 \
  -e "$top" -f 2 -n 1 -w 0 -c 1
grep -q "Out of bounds values : 0 OK" "$state/bench.0" || fail "wrong results"
# rank 0's picks, "BYTES ALGO FROM", hier named as the file names it
grep " r0 .*allreduce #[0-9]*: [0-9]* elements of f32 (sum)" "$state/bench.0" |
  sed -E 's/.*: ([0-9]+) elements of f32 \(sum\), (.*) over shm\+tcp, [0-9]+ phases \((.*)\)$/\1 \2|\3/;
          s/hier \(within hosts ring, across hosts (ring|rhd);[^)]*\)/hier:\1/' |
  sort -u >"$state/picks"
# A loaded machine measures fewer sizes in the budget (the largest are left out): in a full
# `make test` the 12 s budget this test had reached only 512 B (7 sizes, 14 when quiet).
[ "$(wc -l <"$state/picks")" -ge 6 ] || fail "too few picks in the log: $(cat "$state/picks")"
awk -v picks="$state/picks" '
  $1 == "time" && $3 == "3x2" && $4 == "allreduce" {
    t[$5 " " $6] = $7; if (!($5 in best) || $7 < best[$5]) best[$5] = $7 }
  END {
    while ((getline line < picks) > 0) {
      split(line, p, "|"); split(p[1], f, " "); bytes = f[1] * 4
      if (p[2] != "tuning file") { print "FAIL: " bytes " B: chosen by the " p[2]; bad = 1 }
      else if (t[bytes " " f[2]] != best[bytes]) {
        print "FAIL: " bytes " B: " f[2] " (" t[bytes " " f[2]] " s), the least is " best[bytes]
        bad = 1
      } else n++
    }
    print "bench: " n " sizes, each chosen by the tuning file at its least measured time"
    exit bad
  }' "$state/tuning" || exit 1
echo "PASS: tern tune across 3 namespace hosts x 2 ranks wrote 3x2 rows; the selector chose from them"
