#!/usr/bin/env bash
# deps.sh GROUP: installs the Debian packages that GROUP needs and this machine lacks.
#   build  what compiling libtern and the tern command takes (SimGrid: `tern sim coll` only;
#          OpenDHT's C API: the swarm's DHT)
#   test   build + what `make test` takes (cmocka, clang's libFuzzer, python3 + numpy + torch for
#          the binding's and the DDP hook's tests (torch is about 800 MB), iproute2, Open MPI's and
#          MPICH's launchers, which the launch-environment tests start ranks with, and nftables
#          and iptables, which the WAN harness redirects, queues and cuts with; python3-venv for
#          the pip install test; clang-format and cppcheck for `make lint`)
#   bench  test + the peers tern is measured against (Open MPI, MPICH, Gloo through python3-torch)
# Run as root (it calls apt-get); as another user it names what to install and fails.
set -euo pipefail

build=(cmake make gcc g++ pkg-config libsodium-dev libjansson-dev libsimgrid-dev libopendht-c-dev)
test=("${build[@]}" libcmocka-dev clang libclang-rt-14-dev python3 python3-numpy python3-torch python3-venv
      iproute2 procps openmpi-bin mpich nftables iptables util-linux clang-format cppcheck)
bench=("${test[@]}" openmpi-bin libopenmpi-dev mpich libmpich-dev python3-torch python3-matplotlib
       hyperfine)

group=${1:-build}
case "$group" in
  build) wanted=("${build[@]}") ;;
  test) wanted=("${test[@]}") ;;
  bench) wanted=("${bench[@]}") ;;
  *) echo "deps.sh: unknown group '$group' (build, test, bench)" >&2; exit 2 ;;
esac

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
  echo "deps.sh: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
