#!/usr/bin/env bash
# pace.sh TERN [MEDIAN_MS SLOW_ROUNDS FACTOR SLACK_MS SIGNAL]: four healthy peers on one line
# average a 77 KB vector (19,250 floats) over loopback, 30 rounds; once the victim has reported
# round 9 it is sent SIGNAL (default KILL; STOP stalls it) for real. From a survivor's reports
# (matching + averaging per round): the healthy median of rounds 1-9 must be at most MEDIAN_MS
# (default 50); after the signal at most SLOW_ROUNDS rounds (default 2) may pay a deadline
# (longer than a tenth of the matching time); and the median of the last 10 rounds must be
# within FACTOR (default 2) of the healthy median plus SLACK_MS (default 0). Prints the figures.
source "$(dirname "$0")/../../tests/swarm/lib.sh" "$1"
MEDIAN=${2:-50} SLOW=${3:-2} FACTOR=${4:-2} SLACK=${5:-0} SIGNAL=${6:-KILL}
common=(--run-id "pace-$$" --rounds 30 --dim 19250 --target-group 4 --min-group 2
        --match-timeout 1 --timeout 2 --show 1)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --value 0
A=$(addr_of p0)
for i in 1 2 3; do start_peer "p$i" --listen 127.0.0.1:0 --join "$A" "${common[@]}" --value "$i"; done
for _ in $(seq 1000); do grep -q '^round 9 ' "$WORK/p3.out" && break; sleep 0.01; done
grep -q '^round 9 ' "$WORK/p3.out" || fail "the victim never reached round 9"
kill -s "$SIGNAL" "$PID_p3"
for i in 0 1 2; do wait "$(eval echo \$PID_p$i)" || fail "survivor p$i exited with an error"; done
grep -q '^final' "$WORK/p3.out" && fail "the victim finished before the kill: the test proved nothing"
# per round of p0: "round ms" (matching + averaging)
awk '/^round / { for (i = 1; i < NF; i++) { if ($i == "matching") m = $(i + 1); if ($i == "averaging") a = $(i + 1) }
  printf "%d %.1f\n", $2, 1000 * (m + a) }' "$WORK/p0.out" >"$WORK/ms"
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 1e9; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
healthy=$(awk '$1 >= 1 && $1 <= 9 { print $2 }' "$WORK/ms" | median)
after=$(awk '$1 >= 20 { print $2 }' "$WORK/ms" | median)
slow=$(awk '$1 >= 10 && $2 > 100 { n++ } END { print n + 0 }' "$WORK/ms")
echo "healthy median $healthy ms (rounds 1-9), $slow rounds after the kill over 100 ms, median of rounds 20-29 $after ms"
echo "rounds after the kill (round ms):" $(awk '$1 >= 10 && $1 <= 15 { printf "%d:%s ", $1, $2 }' "$WORK/ms")
awk -v h="$healthy" -v m="$MEDIAN" 'BEGIN { exit !(h <= m) }' || fail "healthy median $healthy ms > $MEDIAN ms"
[ "$slow" -le "$SLOW" ] || fail "$slow rounds after the kill paid a deadline (at most $SLOW)"
awk -v a="$after" -v h="$healthy" -v f="$FACTOR" -v s="$SLACK" 'BEGIN { exit !(a <= f * h + s) }' ||
  fail "rounds 20-29 take $after ms, healthy $healthy ms (factor $FACTOR, slack $SLACK ms)"
echo "OK: pace"
