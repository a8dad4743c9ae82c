# shellcheck shell=bash
# nshosts.sh: hosts made of network namespaces, for the scripts that run tern across several
# (sourced by tests/wan/hosts.sh and bench/hosts/run.sh). Host I is the namespace $prefix-hI with
# lo up and, on each network N, an interface ethN at 10.(NET0 + N).0.(I + 1)/24: one end of a veth
# whose other end is on bridge brN in a hub namespace, $prefix-hub.
#   nsh_need WHO             exits 77 (CTest: skipped), saying why, unless this is root and ip,
#                            unshare and timeout are there
#   nsh_up NAME HOSTS NETS NET0
#                            makes them; sets prefix (NAME-<pid>, what the namespaces are named
#                            by), state (a fresh directory) and pids (empty: the caller's
#                            background processes); on exit kills pids, removes the namespaces
#                            and state
#   nsh_hub_if I N           the name of host I's veth on network N, on the hub's side
#   nsh_spawn I HOSTNAME CMD...
#                            starts CMD in the background (its pid is added to pids), in host I's
#                            namespace and a UTS namespace of its own named HOSTNAME: tern knows
#                            a host by hostname and boot id (docs/ENVIRONMENT.md), so ranks on
#                            different hosts use shared memory within one, TCP across

nsh_need() {
  [ "$(id -u)" -eq 0 ] || { echo "$1: needs root to make namespaces: skipped"; exit 77; }
  local tool
  for tool in ip unshare timeout; do
    command -v "$tool" >/dev/null || { echo "$1: no $tool: skipped"; exit 77; }
  done
}

nsh_cleanup() {
  local p i
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for i in $(seq 0 $((nsh_hosts - 1))); do ip netns del "$prefix-h$i" 2>/dev/null || true; done
  ip netns del "$prefix-hub" 2>/dev/null || true
  rm -rf "$state"
}

# Interface names hold 15 characters: "nh", a pid (7 at most), "h", I and "n", N fit.
nsh_hub_if() { echo "nh$$h${1}n$2"; }

nsh_up() {
  prefix="$1-$$" nsh_hosts=$2
  local nets=$3 net0=$4 i net ns hub
  state=$(mktemp -d "/tmp/$prefix.XXXXXX")
  pids=()
  trap nsh_cleanup EXIT INT TERM
  ip netns add "$prefix-hub"
  for net in $(seq 0 $((nets - 1))); do
    ip -n "$prefix-hub" link add "br$net" type bridge
    ip -n "$prefix-hub" link set "br$net" up
  done
  for i in $(seq 0 $((nsh_hosts - 1))); do
    ns="$prefix-h$i"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for net in $(seq 0 $((nets - 1))); do
      hub=$(nsh_hub_if "$i" "$net")
      ip link add "$hub" type veth peer name "eth$net" netns "$ns"
      ip link set "$hub" netns "$prefix-hub"
      ip -n "$prefix-hub" link set "$hub" master "br$net" up
      ip -n "$ns" addr add "10.$((net0 + net)).0.$((i + 1))/24" dev "eth$net"
      ip -n "$ns" link set "eth$net" up
    done
  done
}

nsh_spawn() {
  local host=$1 name=$2
  shift 2
  # shellcheck disable=SC2016 # "$0" and "$@" are the inner shell's
  ip netns exec "$prefix-h$host" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$name" "$@" &
  pids+=($!)
}
