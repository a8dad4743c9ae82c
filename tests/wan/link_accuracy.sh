#!/usr/bin/env bash
# link_accuracy.sh BIN: the harness measured against its own plan. For every pair of regions (the
# first peer of each) and inside every region that has two peers, probe (probe.c) times round
# trips of one byte over TCP and of one datagram over UDP, and a bulk transfer of about 0.75 s's
# worth. The fastest round trip, TCP's and UDP's, must be the link's latency within MIN_ABS +
# MIN_REL (the delayers never hold anything less than the latency, so this is tight), TCP's median
# within MED_ABS + MED_REL (looser: on a loaded machine a delayer wakes late now and then), and
# the bulk rate (the fastest of up to BULK_TRIES) the link's within RATE_REL (INTRA_REL inside a
# region, where only the kernel and htb stand). Prints the table docs/WAN.md quotes. The probes
# run at nice -10, as the delayers do, so that what is measured is the harness and not the
# machine's other work.
set -euo pipefail
bin=$1
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
MIN_ABS=1.0 MIN_REL=0.01 MED_ABS=10.0 MED_REL=0.05 RATE_REL=0.12 INTRA_REL=0.25 BULK_TRIES=3

declare -A first second port
while read -r p r _ _; do
  if [ -z "${first[$r]:-}" ]; then first[$r]=$p; elif [ -z "${second[$r]:-}" ]; then second[$r]=$p; fi
done <"$WAN_STATE/peers"
for r in "${!first[@]}"; do
  p=${first[$r]}
  "$WAN" exec "$p" nice -n -10 "$bin/wan_probe" serve 100 >"$WAN_STATE/probe-port-$p" 2>"$WAN_STATE/err-probe-$p" &
done
for r in "${!first[@]}"; do
  p=${first[$r]}
  for _ in $(seq 50); do [ -s "$WAN_STATE/probe-port-$p" ] && break; sleep 0.1; done
  port[$p]=$(cat "$WAN_STATE/probe-port-$p")
  [ -n "${port[$p]}" ] || fail "probe server of peer $p did not start"
done

bad=0
# measure FROM TO NAME RTT_MS KBIT RATE_TOLERANCE
measure() {
  local from=$1 to=$2 name=$3 rtt=$4 kbit=$5 tol=$6 addr ping uping bulk med low ulow mbit bytes
  addr="$("$WAN" addr "$to"):${port[$to]}"
  ping=$("$WAN" exec "$from" nice -n -10 "$bin/wan_probe" ping "$addr" 11) || fail "ping $name: $ping"
  uping=$("$WAN" exec "$from" nice -n -10 "$bin/wan_probe" uping "$addr" 11) || fail "uping $name: $uping"
  bytes=$(awk -v k="$kbit" 'BEGIN { b = k * 125 * 0.75; print (b < 1e6 ? 1e6 : int(b)) }')
  read -r med low <<<"$(awk '{ print $6, $8 }' <<<"$ping")"
  ulow=$(awk '{ print $8 }' <<<"$uping")
  # The fastest of up to BULK_TRIES transfers: a busy CPU can only slow one down (the shaper
  # never lets more through than the rate), so the fastest is the link's and one that is too
  # fast fails at once.
  mbit=0
  for _ in $(seq "$BULK_TRIES"); do
    bulk=$("$WAN" exec "$from" nice -n -10 "$bin/wan_probe" bulk "$addr" "$bytes") || fail "bulk $name: $bulk"
    mbit=$(awk -v best="$mbit" '{ x = $(NF - 1); print (x > best ? x : best) }' <<<"$bulk")
    awk -v gm="$mbit" -v m="$kbit" -v tol="$tol" 'BEGIN { exit !(gm >= m / 1000 * (1 - tol)) }' && break
  done
  awk -v n="$name" -v r="$rtt" -v med="$med" -v low="$low" -v ulow="$ulow" -v k="$kbit" -v gm="$mbit" -v tol="$tol" \
    -v ma="$MIN_ABS" -v mr="$MIN_REL" -v da="$MED_ABS" -v dr="$MED_REL" '
    function within(x, lim) { return x <= lim && x >= -lim }
    BEGIN {
      m = k / 1000; dm = (gm - m) / m
      ok = within(low - r, ma + mr * r) && within(ulow - r, ma + mr * r) && \
        within(med - r, da + dr * r) && within(dm, tol)
      printf "%-18s set %5.1f ms: tcp min %+5.2f median %+5.2f, udp min %+5.2f   %7.2f Mbit/s (set %7.2f, %+5.1f%%)  %s\n",
        n, r, low - r, med - r, ulow - r, gm, m, 100 * dm, ok ? "ok" : "OUT OF BOUNDS"
      exit !ok
    }' || bad=1
}

intra=$(cat "$WAN_STATE/intra")
while read -r a b na nb rtt _ _ kbit _; do
  measure "${first[$a]}" "${first[$b]}" "$na-$nb" "$rtt" "$kbit" "$RATE_REL"
done < <(awk 'NF == 9' "$WAN_STATE/links")
for r in "${!second[@]}"; do
  measure "${second[$r]}" "${first[$r]}" "inside $("$WAN" region "${first[$r]}")" 0 "$intra" "$INTRA_REL"
done
[ $bad -eq 0 ] || fail "some links are off their plan"
echo "PASS: every link within its plan"
