#!/usr/bin/env bash
# cut_heal.sh BIN: `wan.sh cut` severs two places and `wan.sh heal` joins them again. Between
# peer 0 and peer 1 (two regions), in both directions: a ping answers before the cut, gets no
# answer within WAIT_S while the regions are cut (nor when one peer is cut from everyone), and
# answers again once healed.
set -euo pipefail
bin=$1
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
WAIT_S=2
ra=$("$WAN" region 0) rb=$("$WAN" region 1)
declare -A port
for p in 0 1; do
  "$WAN" exec "$p" "$bin/wan_probe" serve 100 >"$WAN_STATE/probe-port-$p" 2>"$WAN_STATE/err-probe-$p" &
done
for p in 0 1; do
  for _ in $(seq 50); do [ -s "$WAN_STATE/probe-port-$p" ] && break; sleep 0.1; done
  port[$p]=$(cat "$WAN_STATE/probe-port-$p")
done

# expect answers|silence FROM TO
expect() {
  local want=$1 from=$2 to=$3 rc=0
  timeout "$WAIT_S" "$WAN" exec "$from" "$bin/wan_probe" ping "$("$WAN" addr "$to"):${port[$to]}" 2 \
    >/dev/null 2>&1 || rc=$?
  if [ "$want" = answers ] && [ $rc -ne 0 ]; then fail "peer $from got no answer from peer $to ($4)"; fi
  if [ "$want" = silence ] && [ $rc -eq 0 ]; then fail "peer $from reached peer $to ($4)"; fi
  echo "peer $from -> peer $to: $want ($4)"
}

expect answers 0 1 "before any cut"
expect answers 1 0 "before any cut"
"$WAN" cut "$ra" "$rb"
expect silence 0 1 "$ra cut from $rb"
expect silence 1 0 "$ra cut from $rb"
"$WAN" heal "$ra" "$rb"
expect answers 0 1 "healed"
expect answers 1 0 "healed"
"$WAN" cut p1 all
expect silence 0 1 "peer 1 cut from all"
expect silence 1 0 "peer 1 cut from all"
"$WAN" heal p1 all
expect answers 0 1 "healed"
expect answers 1 0 "healed"
echo "PASS: cuts silence both directions; heals restore them"
