#!/usr/bin/env bash
# grid_churn.sh TERN GRID N ROUNDS TOL COMPUTE [KILL_AFTER STOP_AFTER]: N peers on the first N
# cells of GRID (M,M,...; N may be less than the grid's cells: Moshpit allows it), unequal values
# and weights, ROUNDS rounds, COMPUTE seconds of "training" between two rounds (--compute). Without faults every peer must end within TOL (relative) of the exact
# weighted global average and the weights must sum to the total. With KILL_AFTER and
# STOP_AFTER, peer 3 is SIGKILLed once it has reported round KILL_AFTER and peer N-2 SIGSTOPped
# once it has reported round STOP_AFTER, for real: the survivors must finish every round, end
# within TOL of their own weighted mean, and hold exactly the total weight less the victims'
# last reported weights (to 1e-9): nothing counted twice, nothing lost but the victims'.
source "$(dirname "$0")/lib.sh" "$1"
GRID=$2 N=$3 ROUNDS=$4 TOL=$5 COMPUTE=$6 KILL=${7:-} STOP=${8:-}
IFS=, read -r -a sizes <<<"$GRID"
common=(--run-id "churn-$$" --grid "$GRID" --rounds "$ROUNDS" --dim 1000 --target-group 64
        --min-group 2 --match-timeout 1 --timeout 2 --show 1 --compute "$COMPUTE")
for i in $(seq 0 $((N - 1))); do
  coord="" x=$i
  for m in "${sizes[@]}"; do coord="$coord,$((x % m))"; x=$((x / m)); done
  join=""
  [ "$i" -gt 0 ] && join="--join $(addr_of p0)"
  start_peer "p$i" --listen 127.0.0.1:0 $join "${common[@]}" --coord "${coord#,}" \
    --value "$(grid_value "$i")" --weight "$(grid_weight "$i")"
done
for i in $(seq 0 $((N - 1))); do addr_of "p$i" >/dev/null; done
T0=$(date +%s.%N)
victims=()
# victim NAME ROUND SIGNAL: sends SIGNAL once NAME has reported ROUND or a later one (a peer that
# pooled with one further on, or caught up, skips rounds).
reached() { awk -v r="$2" '/^round / && $2 >= r { f = 1 } END { exit !f }' "$WORK/$1.out"; }
victim() {
  for _ in $(seq 1000); do reached "$1" "$2" && break; sleep 0.01; done
  reached "$1" "$2" || fail "$1 never reached round $2"
  kill -s "$3" "$(eval echo \$PID_$1)"
  victims+=("$1")
}
[ -n "$KILL" ] && victim p3 "$KILL" KILL
[ -n "$STOP" ] && victim "p$((N - 2))" "$STOP" STOP
is_victim() { [[ " ${victims[*]} " == *" $1 "* ]]; }
for i in $(seq 0 $((N - 1))); do
  is_victim "p$i" && continue
  wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"
done
T1=$(date +%s.%N)
lost=0
for v in "${victims[@]}"; do
  kill -9 "$(eval echo \$PID_$v)" 2>/dev/null
  grep -q '^final' "$WORK/$v.out" && fail "victim $v finished before its signal: the test proved nothing"
  w=$(grep '^round ' "$WORK/$v.out" | tail -1 | awk '{ for (i = 1; i < NF; i++) if ($i == "->") print $(i + 1) }')
  lost=$(awk -v a="$lost" -v b="$w" 'BEGIN { printf "%.12g", a + b }')
done
read -r want wsum < <(grid_average "$N")
sw=0 swv=0 alone=0 rounds=0
for i in $(seq 0 $((N - 1))); do
  is_victim "p$i" && continue
  line=$(grep '^final' "$WORK/p$i.out") || fail "p$i printed no final line"
  v=$(echo "$line" | awk '{ print $7 }') w=$(echo "$line" | awk '{ print $3 }')
  eval "V_$i=$v"
  sw=$(awk -v a="$sw" -v b="$w" 'BEGIN { printf "%.12g", a + b }')
  swv=$(awk -v a="$swv" -v b="$w" -v c="$v" 'BEGIN { printf "%.12g", a + b * c }')
  alone=$((alone + $(grep -c '^round .* group 1 ' "$WORK/p$i.out")))
  rounds=$((rounds + $(grep -c '^round ' "$WORK/p$i.out")))
done
close_to "$sw" "$(awk -v a="$wsum" -v b="$lost" 'BEGIN { printf "%.12g", a - b }')" 1e-9 ||
  fail "the survivors' weights sum to $sw; total $wsum less the victims' $lost"
mean=$(awk -v a="$swv" -v b="$sw" 'BEGIN { printf "%.12g", a / b }')
[ ${#victims[@]} -eq 0 ] && { close_to "$mean" "$want" 1e-5 || fail "weighted mean $mean, not $want"; }
worst=0
for i in $(seq 0 $((N - 1))); do
  is_victim "p$i" && continue
  v=$(eval echo \$V_$i)
  close_to "$v" "$mean" "$TOL" || fail "p$i holds $v, the survivors' weighted mean is $mean (tolerance $TOL)"
  worst=$(awk -v a="$worst" -v v="$v" -v m="$mean" 'BEGIN { d = (v - m) / m; if (d < 0) d = -d; printf "%.3g", (d > a ? d : a) }')
done
echo "OK: $N peers on $GRID, ${#victims[@]} victims: survivors within $worst of their weighted mean $mean after $ROUNDS rounds, weights sum $sw, $alone of $rounds peer-rounds alone, $(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }') s"
