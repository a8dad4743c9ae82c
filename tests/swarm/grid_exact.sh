#!/usr/bin/env bash
# grid_exact.sh TERN M D [COMPRESS TOL]: N = M^D peers on an M x ... x M grid, unequal values
# and weights, D rounds, no failures: every peer must then hold the exact weighted global
# average (to float rounding, or TOL with compression) and the weights must sum to the total.
source "$(dirname "$0")/lib.sh" "$1"
M=$2 D=$3 COMPRESS=${4:-none} TOL=${5:-1e-5}
N=$((M ** D))
GRID=$(printf "$M,%.0s" $(seq "$D")); GRID=${GRID%,}
# A generous matching time: a peer reads its line for half of it after the last new member it
# saw. The peers start one after another (each joins the one before), so under TSan beside
# another test the rows of the 3x3 grid started about 4 s apart, and so reached round 1 (2026-12-05:
# with a window from each peer's own arrival, no column formed; grid_staggered.sh has it on
# purpose). A healthy group forms as soon as its last member is seen, so this costs nothing else.
for i in $(seq 0 $((N - 1))); do
  coord="" x=$i
  for _ in $(seq "$D"); do coord="$coord,$((x % M))"; x=$((x / M)); done
  join=""
  [ "$i" -gt 0 ] && join="--join $(addr_of p0)"
  [ "$i" -gt 1 ] && join="$join --join $(addr_of p$((i - 1)))"
  start_peer "p$i" --listen 127.0.0.1:0 $join --run-id "grid-$$" --grid "$GRID" \
    --coord "${coord#,}" --rounds "$D" --dim 1000 --value "$(grid_value "$i")" \
    --weight "$(grid_weight "$i")" --target-group "$M" --min-group "$M" --match-timeout 16 \
    --timeout 10 --compress "$COMPRESS"
done
for p in "${PIDS[@]}"; do wait "$p" || fail "a peer exited with an error"; done
# Expected: element 0 = sum(w v) / sum(w), with v = value + 0.
read -r want wsum < <(grid_average "$N")
total=0
for i in $(seq 0 $((N - 1))); do
  line=$(grep '^final' "$WORK/p$i.out") || fail "peer $i printed no final line"
  grep -q "group $M " "$WORK/p$i.out" || fail "peer $i never was in a full group"
  [ "$(grep -c "^round .* group $M failed 0 parts $M/$M" "$WORK/p$i.out")" -eq "$D" ] ||
    fail "peer $i: not $D full rounds"
  got=$(echo "$line" | awk '{ print $7 }')
  w=$(echo "$line" | awk '{ print $3 }')
  close_to "$got" "$want" "$TOL" || fail "peer $i holds $got, the global average is $want"
  total=$(awk -v a="$total" -v b="$w" 'BEGIN { printf "%.12g", a + b }')
done
close_to "$total" "$wsum" 1e-9 || fail "weights sum to $total, not $wsum"
echo "OK: $N peers on a ${GRID} grid hold the global average $want after $D rounds (weights sum $total)"
