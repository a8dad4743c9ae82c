#!/usr/bin/env bash
# wan.sh: the WAN harness. Builds a world of regions out of network namespaces on this machine,
# runs a driver command in it, and takes everything down afterwards, even on failure.
#
#   wan.sh [--regions A,B,..] [--peers N] [--place R,..] [--bw-scale S] [--intra-gbit G]
#          [--loss P] [--links FILE] [--bin DIR] [--deadline SECONDS] -- DRIVER [ARGS...]
#
# Every peer is a namespace of its own ("a machine"): one veth into a bridge that lives in a hub
# namespace, an address 10.77.(region+1).(peer+1)/16, and, on its side of the veth, an htb with
# one class per other region at that link's rate (scaled, see topo.py) and one for its own
# region. In each peer's namespace a relay (relay.c) holds every TCP connection to another region
# for the link's one-way latency, both ways (an nft rule there redirects new connections to it),
# and udp_delay (udp_delay.c) holds every UDP datagram to another region for that latency (an
# iptables rule queues them to it). Cuts are nft drop rules. Defaults: 8 peers in Virginia,
# Frankfurt, Tokyo and Oregon (two each), links from aws-10-regions.json beside this script,
# rates x 0.1, no loss, the two delayers from DIR (default: build/tests/wan of this checkout),
# a deadline of 900 s.
#
# The driver runs in this (the root) namespace with WAN_STATE (the harness's state directory),
# WAN (this script) and WAN_PEERS set, and steers the world through this script:
#   $WAN exec PEER [--] CMD...   run CMD in PEER's namespace (PEER: 3 or p3), with a hostname of
#                                its own ("p3-tokyo"), so programs see separate hosts
#   $WAN addr PEER               PEER's address;  $WAN region PEER: its region's name
#   $WAN kill PEER [SIGNAL]      SIGKILL (or SIGNAL) every process of PEER but its delayers
#   $WAN cut X Y, $WAN heal X Y  drop (or restore) all traffic between X and Y, each a region
#                                name, a peer (p3) or "all"
#   $WAN links                   the plan: peers, then links (topo.py's files)
#   $WAN logs                    every delayer's log
# When the driver ends (or the deadline, or SIGINT/SIGTERM), every process in the namespaces is
# ended and every namespace deleted (the veths and the bridge go with them); the exit code is
# the driver's (124 when the deadline stopped it). Namespaces are named ternwan<pid>-*; a
# harness that was SIGKILLed leaves them (and its state directory, /tmp/ternwan<pid>.*) behind,
# and the next one sweeps them (their owner pid is gone); its driver, out of reach, runs on until
# its deadline. Nothing is ever addressed outside 10.77.0.0/16 inside these namespaces. Needs root (exit
# 77 without it: the tests count that as skipped), iproute2, nftables, iptables (its legacy
# backend), util-linux and python3.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MARK=0x7e57

die() {
  echo "wan.sh: $*" >&2
  exit 1
}

# ---- the world as the state directory describes it ---------------------------------------------

npeers() { wc -l <"$WAN_STATE/peers"; }

# A peer argument ("3" or "p3") as its index; dies on anything else.
peer_index() {
  local p=${1#p}
  [[ $p =~ ^[0-9]+$ ]] && [ "$p" -lt "$(npeers)" ] || die "no peer '$1' (peers are 0 to $(($(npeers) - 1)))"
  echo "$p"
}

peer_field() { awk -v p="$1" -v f="$2" '$1 == p { print $f }' "$WAN_STATE/peers"; }
ns_of() { echo "$(cat "$WAN_STATE/prefix")-p$1"; }

# "CIDR PEER..." for a target of cut/heal: a region name, a peer, or all.
target() {
  local t=$1
  if [ "$t" = all ]; then
    echo "10.77.0.0/16 $(awk '{ printf "%s ", $1 }' "$WAN_STATE/peers")"
  elif [[ $t =~ ^p[0-9]+$ ]]; then
    local i
    i=$(peer_index "$t")
    echo "$(peer_field "$i" 4)/32 $i"
  else
    local r
    r=$(awk -v n="$t" '$3 == n { print $2; exit }' "$WAN_STATE/peers")
    [ -n "$r" ] || die "no region or peer '$t' here (see \$WAN links)"
    echo "10.77.$((r + 1)).0/24 $(awk -v r="$r" '$2 == r { printf "%s ", $1 }' "$WAN_STATE/peers")"
  fi
}

# cut_rules add|delete PEER CIDR: PEER drops everything to and from CIDR but its own address.
cut_rules() {
  local op=$1 i=$2 cidr=$3 ns own tag h
  ns=$(ns_of "$i")
  own=$(peer_field "$i" 4)
  tag="cut $cidr"
  if [ "$op" = add ]; then
    ip netns exec "$ns" nft add rule ip wan out_filter ip daddr "$cidr" ip daddr != "$own" drop comment "\"$tag\""
    ip netns exec "$ns" nft add rule ip wan in_filter ip saddr "$cidr" ip saddr != "$own" drop comment "\"$tag\""
    return
  fi
  for chain in out_filter in_filter; do
    for h in $(ip netns exec "$ns" nft -a list chain ip wan "$chain" |
      awk -v t="comment \"$tag\"" 'index($0, t) { print $NF }'); do
      ip netns exec "$ns" nft delete rule ip wan "$chain" handle "$h"
    done
  done
}

cmd_cut() {
  [ $# -eq 3 ] || die "usage: \$WAN $1 X Y"
  local op=add x y
  [ "$1" = heal ] && op=delete
  read -r -a x <<<"$(target "$2")"
  read -r -a y <<<"$(target "$3")"
  for i in "${x[@]:1}"; do cut_rules "$op" "$i" "${y[0]}"; done
  for i in "${y[@]:1}"; do cut_rules "$op" "$i" "${x[0]}"; done
}

cmd_kill() {
  local i ns net sig=${2:-KILL} pids=()
  i=$(peer_index "$1")
  ns=$(ns_of "$i")
  net=" $(cat "$WAN_STATE/net-pids-$i") "
  for pid in $(ip netns pids "$ns"); do
    [[ $net == *" $pid "* ]] || pids+=("$pid")
  done
  date +%s.%N >"$WAN_STATE/killed-$i"
  [ ${#pids[@]} -gt 0 ] || { echo "wan.sh: peer $i runs nothing to kill" >&2; return 0; }
  kill -s "$sig" "${pids[@]}" 2>/dev/null || true
  echo "wan.sh: killed peer $i ($(peer_field "$i" 3)): SIG$sig to ${pids[*]}" >&2
}

cmd_exec() {
  local i host
  i=$(peer_index "$1")
  shift
  [ "${1:-}" != -- ] || shift
  [ $# -gt 0 ] || die "usage: \$WAN exec PEER [--] CMD..."
  host="p$i-$(peer_field "$i" 3 | tr 'A-Z' 'a-z')"
  exec ip netns exec "$(ns_of "$i")" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
}

helper() {
  [ -n "${WAN_STATE:-}" ] && [ -f "$WAN_STATE/peers" ] || die "$1: no harness here (WAN_STATE is not set by wan.sh)"
  case $1 in
    exec) shift; cmd_exec "$@" ;;
    kill) shift; cmd_kill "$@" ;;
    cut | heal) cmd_cut "$@" ;;
    addr) peer_field "$(peer_index "$2")" 4 ;;
    region) peer_field "$(peer_index "$2")" 3 ;;
    links) cat "$WAN_STATE/peers" "$WAN_STATE/links" ;;
    logs) for f in "$WAN_STATE"/*-log-*; do echo "== $f"; cat "$f"; done ;;
  esac
}

case ${1:-} in
  exec | kill | cut | heal | addr | region | links | logs) helper "$@"; exit ;;
esac

# ---- building the world ------------------------------------------------------------------------

regions=Virginia,Frankfurt,Tokyo,Oregon peers=8 place="" bw_scale=0.1 intra_gbit=10 loss=0
links_file=$here/aws-10-regions.json bin=$here/../../build/tests/wan deadline=900
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  [ $# -ge 2 ] || die "option $1 wants a value"
  case $1 in
    --regions) regions=$2 ;;
    --peers) peers=$2 ;;
    --place) place=$2 ;;
    --bw-scale) bw_scale=$2 ;;
    --intra-gbit) intra_gbit=$2 ;;
    --loss) loss=$2 ;;
    --links) links_file=$2 ;;
    --bin) bin=$2 ;;
    --deadline) deadline=$2 ;;
    *) die "unknown option $1 (see the first comment of $0)" ;;
  esac
  shift 2
done
[ "${1:-}" = -- ] && [ $# -ge 2 ] || die "usage: wan.sh [OPTIONS] -- DRIVER [ARGS...]"
shift
[ -x "$bin/wan_relay" ] && [ -x "$bin/wan_udp_delay" ] ||
  die "no wan_relay and wan_udp_delay in $bin (build them, or say where: --bin DIR)"
[[ $deadline =~ ^[0-9]+$ ]] || die "--deadline wants whole seconds"
[ "$(id -u)" -eq 0 ] || { echo "wan.sh: needs root for network namespaces: skipped" >&2; exit 77; }
for tool in ip tc nft iptables-legacy unshare python3; do
  command -v "$tool" >/dev/null || die "needs $tool (scripts/deps.sh test installs it)"
done

prefix=ternwan$$
WAN_STATE=$(mktemp -d "/tmp/$prefix.XXXXXX")
export WAN_STATE WAN="$here/wan.sh"
echo "$prefix" >"$WAN_STATE/prefix"
driver=""

# Ends every process in namespace ns (TERM, then KILL after 2 s) and deletes it.
drop_ns() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 20); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || break
    sleep 0.1
  done
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
}

teardown() {
  local rc=$?
  trap - EXIT INT TERM
  # the driver runs as its own process group (timeout makes one): whatever it left running in
  # this namespace goes too, even when the driver itself has ended
  [ -z "$driver" ] || kill -TERM -- "-$driver" 2>/dev/null || true
  for ns in $(ip netns list | awk -v p="$prefix-" 'index($1, p) == 1 { print $1 }'); do
    drop_ns "$ns"
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for f in "$WAN_STATE"/*-log-*; do
      [ -s "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }
    done
  fi
  rm -rf "$WAN_STATE"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Namespaces and state directories of harnesses that died without tearing down (their pid is
# gone).
sweep() {
  local pid
  for ns in $(ip netns list | awk '$1 ~ /^ternwan[0-9]+-/ { print $1 }'); do
    pid=${ns#ternwan}
    pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null || drop_ns "$ns"
  done
  for dir in /tmp/ternwan[0-9]*.*; do
    [ -d "$dir" ] || continue
    pid=${dir#/tmp/ternwan}
    pid=${pid%%.*}
    kill -0 "$pid" 2>/dev/null || rm -rf "$dir"
  done
}

# Starts a delayer of peer i in namespace ns at nice -10 (so that the latency it adds holds
# while the machine is busy), its stderr in LOG, its stdout in OUT; waits (5 s at most) until
# OUT says it is ready, and records its pid among the peer's network processes.
start_net() {
  local i=$1 ns=$2 log=$3 out=$4
  shift 4
  ip netns exec "$ns" nice -n -10 "$@" >"$out" 2>"$log" &
  echo -n "$! " >>"$WAN_STATE/net-pids-$i"
  for _ in $(seq 50); do
    [ -s "$out" ] && return
    sleep 0.1
  done
  die "peer $i: $1 did not start: $(cat "$log")"
}

# The delayers of peer i and the rules that hand them its traffic to other regions: new TCP
# connections are redirected to the relay, UDP datagrams queued to udp_delay.
start_delayers() {
  local i=$1 ns=$2 region=$3 port
  : >"$WAN_STATE/net-pids-$i"
  start_net "$i" "$ns" "$WAN_STATE/relay-log-$i" "$WAN_STATE/relay-port-$i" "$bin/wan_relay" \
    --links "$WAN_STATE/relay-$i" --mark "$MARK" --seed "$((i + 1))"
  port=$(cat "$WAN_STATE/relay-port-$i")
  start_net "$i" "$ns" "$WAN_STATE/udp-log-$i" "$WAN_STATE/udp-out-$i" "$bin/wan_udp_delay" \
    --links "$WAN_STATE/relay-$i" --queue 0 --seed "$((i + 1))"
  ip netns exec "$ns" nft -f - <<EOF
table ip wan {
  chain out_nat {
    type nat hook output priority -100; policy accept;
    meta mark $MARK return
    ip daddr 10.77.0.0/16 ip daddr != 10.77.$((region + 1)).0/24 meta l4proto tcp redirect to :$port
  }
  chain out_filter { type filter hook output priority 0; policy accept; }
  chain in_filter { type filter hook input priority 0; policy accept; }
}
EOF
  ip netns exec "$ns" iptables-legacy -t mangle -A OUTPUT -p udp -d "10.77.$((region + 1)).0/24" -j RETURN
  ip netns exec "$ns" iptables-legacy -t mangle -A OUTPUT -p udp -d 10.77.0.0/16 -j NFQUEUE \
    --queue-num 0 --queue-bypass
}

# htb on peer i's side of its veth: class 1:1 (the default) for its own region, one per other.
shape() {
  local i=$1 ns=$2 cls=1 cidr kbit
  ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: htb default 1
  while read -r cidr kbit; do
    ip netns exec "$ns" tc class add dev eth0 parent 1: classid "1:$cls" htb rate "${kbit}kbit" quantum 60000
    [ "$cidr" = own ] ||
      ip netns exec "$ns" tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst "$cidr" flowid "1:$cls"
    cls=$((cls + 1))
  done <"$WAN_STATE/tc-$i"
}

build() {
  local hub=$prefix-hub
  python3 "$here/topo.py" "$links_file" "$WAN_STATE" --regions "$regions" --peers "$peers" \
    ${place:+--place "$place"} --bw-scale "$bw_scale" --intra-gbit "$intra_gbit" --loss "$loss"
  ip netns add "$hub"
  ip -n "$hub" link set lo up
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up
  while read -r i region _ addr; do
    local ns=$prefix-p$i
    ip netns add "$ns"
    ip -n "$hub" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$hub" link set "v$i" master br0 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$addr/16" dev eth0
    ip -n "$ns" link set eth0 up
    shape "$i" "$ns"
    start_delayers "$i" "$ns" "$region"
  done <"$WAN_STATE/peers"
}

sweep
build
export WAN_PEERS=$peers
echo "wan.sh: $peers peers in $regions up ($prefix), rates x $bw_scale, loss $loss" >&2
timeout -k 5 "$deadline" "$@" &
driver=$!
rc=0
wait "$driver" || rc=$?
exit "$rc"
