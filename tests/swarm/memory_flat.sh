#!/usr/bin/env bash
# memory_flat.sh TERN: two peers average a 16,384-float vector for 1,000 rounds and print their
# resident memory each round. From round 100 (warm) to round 999 it may grow by less than 8 MB:
# keeping one vector-sized buffer a round (64 KiB) would add 57 MB. What does grow, ~3 KB a
# round on this machine, is OpenDHT's own book-keeping of the round's record (a value stored for
# 10 minutes, a search): it stops growing once the first values expire (docs/SWARM.md).
source "$(dirname "$0")/lib.sh" "$1"
common=(--run-id "mem-$$" --rounds 1000 --dim 16384 --target-group 2 --match-timeout 3 --rss)
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --value 0
start_peer p1 --listen 127.0.0.1:0 --join "$(addr_of p0)" "${common[@]}" --value 10
for i in 0 1; do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
for i in 0 1; do
  full=$(grep -c '^round .* group 2 failed 0' "$WORK/p$i.out")
  [ "$full" -ge 990 ] || fail "p$i averaged with its partner in only $full of 1000 rounds"
  a=$(awk '$1 == "round" && $2 == 100 { print $(NF - 1) }' "$WORK/p$i.out")
  b=$(awk '$1 == "round" && $2 == 999 { print $(NF - 1) }' "$WORK/p$i.out")
  [ -n "$a" ] && [ -n "$b" ] || fail "p$i printed no memory figures"
  echo "p$i: rss $a kB at round 100, $b kB at round 999 (+$((b - a)) kB)"
  [ $((b - a)) -lt 8192 ] || fail "p$i grew by $((b - a)) kB over 900 rounds"
done
echo "OK: memory flat over 1000 rounds"
