# ready.sh: sourced by the swarm benchmarks' entry scripts (run.sh, fair.sh).
# bench_ready NAME ROOT OUT: needs root (exit 77 without: network namespaces), installs what the
# WAN harness and the plots need, checks the build, and gives a fresh OUT.
bench_ready() {
  local name=$1 root=$2 out=$3 f
  [ "$(id -u)" -eq 0 ] || { echo "$name: needs root (network namespaces)" >&2; exit 77; }
  "$root/scripts/deps.sh" bench # the WAN harness's tools, matplotlib for the plot
  for f in "$root/build/tern" "$root/build/tests/wan/wan_allreduce" "$root/build/tests/wan/wan_store"; do
    [ -x "$f" ] || { echo "$name: $f missing: build first" >&2; exit 1; }
  done
  rm -rf "$out"
  mkdir -p "$out" "$root/docs/swarm"
}
