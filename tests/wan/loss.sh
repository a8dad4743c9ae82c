#!/usr/bin/env bash
# loss.sh BIN: the relay's loss model, on one lossy link (run with --loss P). Round trips: a lost
# segment stalls its exchange by one round trip, so of COUNT exchanges (a segment each way) about
# 1 - (1 - P)^2 take twice the fastest; the test wants that share within a binomial band of 4
# standard deviations and the median still the plain round trip. Throughput: a bulk transfer
# must keep to Mathis's rate for that loss, (MSS / RTT) sqrt(3 / 2P), within RATE_REL, far
# below the link's own rate. Datagrams: of COUNT sent, each dropped with P on its way out and its
# echo with P on the way back, about 1 - (1 - P)^2 get no answer, within the same band.
set -euo pipefail
bin=$1
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
COUNT=201 RATE_REL=0.25
read -r _ _ na nb rtt _ _ kbit loss <<<"$(awk 'NF == 9' "$WAN_STATE/links")"
"$WAN" exec 1 "$bin/wan_probe" serve 100 >"$WAN_STATE/probe-port" 2>"$WAN_STATE/err-probe" &
for _ in $(seq 50); do [ -s "$WAN_STATE/probe-port" ] && break; sleep 0.1; done
addr="$("$WAN" addr 1):$(cat "$WAN_STATE/probe-port")"

ping=$("$WAN" exec 0 "$bin/wan_probe" ping "$addr" "$COUNT") || fail "ping: $ping"
echo "$na-$nb, loss $loss, rtt $rtt ms: $ping"
read -r med slow <<<"$(awk '{ print $6, $(NF - 4) }' <<<"$ping")"
awk -v m="$med" -v r="$rtt" -v s="$slow" -v n=$((COUNT - 1)) -v p="$loss" '
  BEGIN {
    q = 1 - (1 - p) ^ 2; want = n * q; sd = sqrt(n * q * (1 - q))
    printf "stalled exchanges: %d of %d, expected %.1f +- %.1f\n", s, n, want, 4 * sd
    exit !(s >= want - 4 * sd && s <= want + 4 * sd && m < 1.2 * r + 2)
  }' || fail "the stalls do not follow the loss"

uping=$("$WAN" exec 0 "$bin/wan_probe" uping "$addr" "$COUNT") || fail "uping: $uping"
echo "$uping"
lost=$(awk '{ print $14 }' <<<"$uping")
awk -v l="$lost" -v n="$COUNT" -v p="$loss" '
  BEGIN {
    q = 1 - (1 - p) ^ 2; want = n * q; sd = sqrt(n * q * (1 - q))
    printf "datagrams without an answer: %d of %d, expected %.1f +- %.1f\n", l, n, want, 4 * sd
    exit !(l >= want - 4 * sd && l <= want + 4 * sd)
  }' || fail "the datagrams lost do not follow the loss"

bytes=1500000 # about 2 s: a stall at the start, which bunches what follows, then weighs little
bulk=$("$WAN" exec 0 "$bin/wan_probe" bulk "$addr" "$bytes") || fail "bulk: $bulk"
mbit=$(awk '{ print $(NF - 1) }' <<<"$bulk")
awk -v g="$mbit" -v r="$rtt" -v p="$loss" -v k="$kbit" -v tol=$RATE_REL '
  BEGIN {
    want = 1448 * 8 / (r / 1000) * sqrt(1.5 / p) / 1e6
    printf "bulk rate %.2f Mbit/s, Mathis %.2f, link %.2f\n", g, want, k / 1000
    exit !(g >= want * (1 - tol) && g <= want * (1 + tol))
  }' || fail "the bulk rate is not the lossy flow's"
echo "PASS: loss stalls exchanges and paces flows as modelled"
