#!/usr/bin/env bash
# grid_churn.sh TERN GRID N ROUNDS TOL COMPUTE [KILL_AFTER STOP_AFTER]: N peers on the first N
# cells of GRID (M,M,...; N may be less than the grid's cells: Moshpit allows it), unequal values
# and weights, ROUNDS rounds, COMPUTE seconds of "training" between two rounds (--compute). Without faults every peer must end within TOL (relative) of the exact
# weighted global average and the weights must sum to the total. With KILL_AFTER and
# STOP_AFTER, peer 3 is SIGKILLed once it has reported round KILL_AFTER and peer N-2 SIGSTOPped
# once it has reported round STOP_AFTER, for real: the survivors must finish every round, end
# within TOL of their own weighted mean, and hold exactly the total weight less the victims'
# last reported weights (to 1e-9): nothing counted twice, nothing lost but the victims'.
#
# The signal races with the victim's next round: the harness sees the round's report and sends it,
# but the victim may by then have started the next round (a 0.1 s compute, then matching: under
# load the harness can be later than that). A victim that sent parts of a round it never reported
# has given weight away the report does not show. The victims run with TERN_DEBUG=DEBUG, whose
# "parts go out" line is written (one write(2)) before the first byte of a round leaves
# (src/swarm/butterfly.c), so a victim's .err says exactly which case it was. Between rounds, the
# check is the exact one above. In a round R it never reported, each of its parts was either not
# counted (its weight w stays its own) or averaged by its group, whose share W/|S| is the mean
# weight of the part's contributors: a mean of weights held at the start of R. So its lost weight
# lies between the least and the greatest of w and the weights every other peer reported
# entering R, and the survivors' sum must lie in the range that leaves, to 1e-9.
# That range holds every consistent outcome and no other whole-part miscount (a part counted twice
# or a share lost moves the sum out of it), and a rerun with the signal re-timed would only trade
# this race for another one.
source "$(dirname "$0")/lib.sh" "$1"
GRID=$2 N=$3 ROUNDS=$4 TOL=$5 COMPUTE=$6 KILL=${7:-} STOP=${8:-}
IFS=, read -r -a sizes <<<"$GRID"
stopped=p$((N - 2)) killed=p3
[ -z "$STOP" ] && stopped=""
[ -z "$KILL" ] && killed=""
common=(--run-id "churn-$$" --grid "$GRID" --rounds "$ROUNDS" --dim 1000 --target-group 64
        --min-group 2 --match-timeout 1 --timeout 2 --show 1 --compute "$COMPUTE")
for i in $(seq 0 $((N - 1))); do
  coord="" x=$i
  for m in "${sizes[@]}"; do coord="$coord,$((x % m))"; x=$((x / m)); done
  dbg=""
  [ "p$i" = "$stopped" ] || [ "p$i" = "$killed" ] && dbg=DEBUG
  TERN_DEBUG=$dbg start_joined "p$i" "$i" "${common[@]}" --coord "${coord#,}" \
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
# weight_entering ROUND FILES...: the weights the reports of ROUND in FILES started from.
weight_entering() {
  awk -v r="$1" '/^round / && $2 == r { for (i = 1; i < NF; i++) if ($i == "weight") print $(i + 1) }' "${@:2}"
}
lost_lo=0 lost_hi=0 how=""
for v in "${victims[@]}"; do
  kill -9 "$(eval echo \$PID_$v)" 2>/dev/null
  grep -q '^final' "$WORK/$v.out" && fail "victim $v finished before its signal: the test proved nothing"
  last=$(grep '^round ' "$WORK/$v.out" | tail -1)
  r=$(echo "$last" | awk '{ print $2 }')
  w=$(echo "$last" | awk '{ for (i = 1; i < NF; i++) if ($i == "->") print $(i + 1) }')
  mid=$(sed -n 's/.*swarm: round \([0-9]*\): parts go out.*/\1/p' "$WORK/$v.err" | awk -v r="$r" '$1 > r' | tail -1)
  lo=$w hi=$w
  if [ -n "$mid" ]; then
    others=()
    for f in "$WORK"/p*.out; do [ "$f" != "$WORK/$v.out" ] && others+=("$f"); done
    read -r lo hi < <( (echo "$w"; weight_entering "$mid" "${others[@]}") | sort -g |
      awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo, hi }')
    how="$how $v signalled in round $mid (lost weight in [$lo, $hi]);"
  else
    how="$how $v signalled between rounds (lost weight $w);"
  fi
  lost_lo=$(awk -v a="$lost_lo" -v b="$lo" 'BEGIN { printf "%.12g", a + b }')
  lost_hi=$(awk -v a="$lost_hi" -v b="$hi" 'BEGIN { printf "%.12g", a + b }')
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
awk -v s="$sw" -v t="$wsum" -v lo="$lost_lo" -v hi="$lost_hi" 'BEGIN { e = 1e-9 * (t > 1 ? t : 1)
  exit !(s >= t - hi - e && s <= t - lo + e) }' ||
  fail "the survivors' weights sum to $sw; total $wsum less the victims' [$lost_lo, $lost_hi]:$how"
mean=$(awk -v a="$swv" -v b="$sw" 'BEGIN { printf "%.12g", a / b }')
[ ${#victims[@]} -eq 0 ] && { close_to "$mean" "$want" 1e-5 || fail "weighted mean $mean, not $want"; }
worst=0
for i in $(seq 0 $((N - 1))); do
  is_victim "p$i" && continue
  v=$(eval echo \$V_$i)
  close_to "$v" "$mean" "$TOL" || fail "p$i holds $v, the survivors' weighted mean is $mean (tolerance $TOL)"
  worst=$(awk -v a="$worst" -v v="$v" -v m="$mean" 'BEGIN { d = (v - m) / m; if (d < 0) d = -d; printf "%.3g", (d > a ? d : a) }')
done
echo "OK: $N peers on $GRID, ${#victims[@]} victims:$how survivors within $worst of their weighted mean $mean after $ROUNDS rounds, weights sum $sw, $alone of $rounds peer-rounds alone, $(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }') s"
