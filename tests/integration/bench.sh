#!/usr/bin/env bash
# bench.sh TERN: `tern bench` under `tern run`, as bench/peers runs it: every size measured and
# checked (no wrong element), the modes --inplace 0 / 1 / 2 measuring out of place, both, in
# place only (N/A where a mode was not measured), and a bad --inplace refused with a usage error;
# then nccl-tests' habits: its flags with their meanings, collective names with underscores, one
# rank without a launcher, a usage error printed once per job, buffers filled whatever -c says.
set -u
tern=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

fail() {
  echo "FAIL: $*"
  echo "--- what the run printed:"
  cat "$out"
  exit 1
}

# rows MODE COLL: the bench's size rows for --inplace MODE, one line each: "out-time in-time"
rows() {
  TERN_TIMEOUT=60 timeout -k 5 120 "$tern" run -n 2 -- \
    "$tern" bench "$2" -s 8,64K -n 3 -w 1 -c 1 --inplace "$1" >"$out" 2>&1 || fail "--inplace $1 $2 exited $?"
  grep -q '^# Out of bounds values : 0 OK' "$out" || fail "--inplace $1 $2: wrong elements"
  awk '$1 ~ /^[0-9]+$/ { print $6, $10 }' "$out"
}

is_time() { [[ $1 =~ ^[0-9]+\.[0-9]+$ ]]; }

for coll in broadcast allreduce alltoall; do
  for mode in 0 1 2; do
    n=0
    while read -r outplace inplace; do
      n=$((n + 1))
      case $mode in
      0) is_time "$outplace" && [ "$inplace" = N/A ] || fail "--inplace 0 $coll: '$outplace' '$inplace'" ;;
      1) is_time "$outplace" && is_time "$inplace" || fail "--inplace 1 $coll: '$outplace' '$inplace'" ;;
      2) [ "$outplace" = N/A ] && is_time "$inplace" || fail "--inplace 2 $coll: '$outplace' '$inplace'" ;;
      esac
    done < <(rows "$mode" "$coll")
    [ "$n" -eq 2 ] || fail "--inplace $mode $coll: $n size rows, want 2"
  done
done

# sendrecv has no in-place form: it is measured out of place whatever --inplace says
read -r outplace inplace < <(rows 2 sendrecv)
is_time "$outplace" && [ "$inplace" = N/A ] || fail "--inplace 2 sendrecv: '$outplace' '$inplace'"

"$tern" bench broadcast --inplace 3 >"$out" 2>&1 && fail "--inplace 3 was accepted"
grep -q "bad value '3' for inplace" "$out" || fail "--inplace 3: no usage error naming it"

# nccl-tests' command line, as typed by habit: its program's name, -g 1 -t 1, -i as the step in
# bytes (1K, 2K, 3K), -z 0 (nonblocking calls), -T as a deadline in seconds; one rank, no
# launcher
sizes() { awk '$1 ~ /^[0-9]+$/ { printf "%s ", $1 }' "$out"; }
timeout -k 5 60 "$tern" bench all_reduce_perf -b 1K -e 3K -i 1K -g 1 -t 1 -n 3 -w 1 -c 1 -z 0 \
  -T 30 >"$out" 2>&1 || fail "one rank, nccl-tests' flags: exited $?"
grep -q '^# tern bench allreduce: 1 ranks.*nonblocking' "$out" || fail "not one rank, -z 0"
[ "$(sizes)" = "1024 2048 3072 " ] || fail "-i 1K: sizes '$(sizes)'"
grep -q '^# Out of bounds values : 0 OK' "$out" || fail "one rank: wrong elements"
for name in all_gather allgather reduce_scatter reducescatter alltoall all_to_all send_recv; do
  TERN_TIMEOUT=60 timeout -k 5 60 "$tern" run -n 2 -- "$tern" bench $name -b 64 -e 64 -n 2 -w 1 \
    -c 1 -z 0 >"$out" 2>&1 || fail "$name: exited $?"
  grep -q '^# Out of bounds values : 0 OK' "$out" || fail "$name: wrong elements"
done

# a usage error is printed once for the job, by rank 0, not once per rank
timeout -k 5 60 "$tern" run -n 3 -- "$tern" bench allreduce -g 2 >"$out" 2>&1 && fail "-g 2 was accepted"
[ "$(grep -c '^tern bench: -g 2' "$out")" -eq 1 ] || fail "-g 2: not one usage error"

# -c 0 fills the buffers too: a send buffer never written is read from the kernel's zero page and
# never counts in the resident set; filled, the two 64 MiB buffers do (one rank, no launcher)
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f 'maxrss %M' timeout -k 5 120 "$tern" bench allreduce -b 64M -e 64M -n 1 -w 0 \
    -c 0 >"$out" 2>&1 || fail "-c 0 64M: exited $?"
  rss=$(awk '/^maxrss/ { print $2 }' "$out")
  [ "${rss:-0}" -ge $((2 * 64 * 1024)) ] || fail "-c 0: resident set $rss KiB, under two 64 MiB buffers"
fi
echo "ok"
