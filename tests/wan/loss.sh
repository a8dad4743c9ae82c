#!/usr/bin/env bash
# loss.sh BIN: the relay's loss model, on one lossy link (run with --loss P). Round trips: of
# COUNT exchanges (a segment each way), the relays must lose about 2 COUNT P segments (each logs
# the one it loses), within a binomial band of 4 standard deviations, and each lost segment must
# stall its exchange by a round trip: at least that many exchanges, less the allowances below,
# take 1.75 x the fastest or more; yet the fastest is the plain round trip (a stall is not on
# every exchange). Only at least, and no bound on the median: on a loaded 2-core machine an
# exchange whose processes woke late takes longer, with no segment lost, but none is faster than
# the link (docs/WAN.md). Throughput: a bulk transfer
# must keep to Mathis's rate for that loss, (MSS / RTT) sqrt(3 / 2P), within RATE_REL, far
# below the link's own rate. Datagrams: of COUNT sent, each dropped with P on its way out and its
# echo with P on the way back, the delayers must drop about 1 - (1 - P)^2 of the round trips
# (each logs its drops), within the same band, and at least those get no answer.
set -euo pipefail
bin=$1
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
COUNT=201 RATE_REL=0.25
read -r _ _ na nb rtt _ _ kbit loss <<<"$(awk 'NF == 9' "$WAN_STATE/links")"
"$WAN" exec 1 "$bin/wan_probe" serve 100 >"$WAN_STATE/probe-port" 2>"$WAN_STATE/err-probe" &
for _ in $(seq 50); do [ -s "$WAN_STATE/probe-port" ] && break; sleep 0.1; done
addr="$("$WAN" addr 1):$(cat "$WAN_STATE/probe-port")"

lost() { cat "$WAN_STATE"/relay-log-* | grep -c "^relay: segment lost" || true; }
before=$(lost)
ping=$("$WAN" exec 0 "$bin/wan_probe" ping "$addr" "$COUNT") || fail "ping: $ping"
drawn=$(($(lost) - before))
echo "$na-$nb, loss $loss, rtt $rtt ms: $ping"
read -r least slow <<<"$(awk '{ print $8, $(NF - 4) }' <<<"$ping")"
# The slow exchanges are among the 200 after the first (which carries the connect: its 2
# segments may be lost, unseen), and two lost segments in one exchange make one slow exchange
# (about 200 P^2 = 0.5 such exchanges; 4 allowed).
awk -v l="$least" -v r="$rtt" -v s="$slow" -v d="$drawn" -v n=$((2 * COUNT)) \
  -v p="$loss" '
  BEGIN {
    want = n * p; sd = sqrt(n * p * (1 - p))
    printf "segments lost: %d of %d, expected %.1f +- %.1f; exchanges stalled: %d\n", d, n,
      want, 4 * sd, s
    exit !(d >= want - 4 * sd && d <= want + 4 * sd && s >= d - 2 - 4 && l >= r &&
           l <= 1.01 * r + 1)
  }' || fail "the stalls do not follow the loss"

# A datagram dropped on its way out has no echo to drop, so the drops the delayers log are the
# round trips that lost one; the probe's count may only add those answered after its timeout.
dropped() { cat "$WAN_STATE"/udp-log-* | grep -c "^udp_delay: datagram lost" || true; }
before=$(dropped)
uping=$("$WAN" exec 0 "$bin/wan_probe" uping "$addr" "$COUNT") || fail "uping: $uping"
drops=$(($(dropped) - before))
echo "$uping"
lost=$(awk '{ print $14 }' <<<"$uping")
awk -v l="$lost" -v d="$drops" -v n="$COUNT" -v p="$loss" '
  BEGIN {
    q = 1 - (1 - p) ^ 2; want = n * q; sd = sqrt(n * q * (1 - q))
    printf "datagrams dropped: %d of %d round trips, expected %.1f +- %.1f; without an answer: %d\n",
      d, n, want, 4 * sd, l
    exit !(d >= want - 4 * sd && d <= want + 4 * sd && l >= d)
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
