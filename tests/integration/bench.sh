#!/usr/bin/env bash
# bench.sh TERN: `tern bench` under `tern run`, as bench/peers runs it: every size measured and
# checked (no wrong element), the modes -i 0 / 1 / 2 measuring out of place, both, in place only
# (N/A where a mode was not measured), and a bad -i refused with a usage error.
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

# rows MODE COLL: the bench's size rows for mode -i MODE, one line each: "out-time in-time"
rows() {
  TERN_TIMEOUT=60 timeout -k 5 120 "$tern" run -n 2 -- \
    "$tern" bench "$2" -s 8,64K -n 3 -w 1 -c 1 -i "$1" >"$out" 2>&1 || fail "-i $1 $2 exited $?"
  grep -q '^# Out of bounds values : 0 OK' "$out" || fail "-i $1 $2: wrong elements"
  awk '$1 ~ /^[0-9]+$/ { print $6, $10 }' "$out"
}

is_time() { [[ $1 =~ ^[0-9]+\.[0-9]+$ ]]; }

for coll in broadcast allreduce; do
  for mode in 0 1 2; do
    n=0
    while read -r outplace inplace; do
      n=$((n + 1))
      case $mode in
      0) is_time "$outplace" && [ "$inplace" = N/A ] || fail "-i 0 $coll: '$outplace' '$inplace'" ;;
      1) is_time "$outplace" && is_time "$inplace" || fail "-i 1 $coll: '$outplace' '$inplace'" ;;
      2) [ "$outplace" = N/A ] && is_time "$inplace" || fail "-i 2 $coll: '$outplace' '$inplace'" ;;
      esac
    done < <(rows "$mode" "$coll")
    [ "$n" -eq 2 ] || fail "-i $mode $coll: $n size rows, want 2"
  done
done

# alltoall has no in-place form: it is measured out of place whatever -i says
read -r outplace inplace < <(rows 2 alltoall)
is_time "$outplace" && [ "$inplace" = N/A ] || fail "-i 2 alltoall: '$outplace' '$inplace'"

"$tern" bench broadcast -i 3 >"$out" 2>&1 && fail "-i 3 was accepted"
grep -q "bad value '3' for -i" "$out" || fail "-i 3: no usage error naming it"
echo "ok"
