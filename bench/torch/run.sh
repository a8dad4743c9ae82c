#!/usr/bin/env bash
# run.sh BUILD OUT.csv [RANKS...]: the torch.distributed benchmark (torch_backend.py) over tern's
# backend and Gloo at each rank count (default 2 4), alternating backends, into OUT.csv;
# docs/PYTORCH.md's speed table is made from it. Gloo runs on loopback (GLOO_SOCKET_IFNAME=lo).
set -eu
build=$1 out=$2
shift 2
ranks=${*:-2 4}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
export PYTHONPATH=$src/python TERN_LIBRARY=$build/libtern.so GLOO_SOCKET_IFNAME=lo TIMEOUT=600
echo "what,backend,ranks,bytes,us" >"$out"
for n in $ranks; do
  for backend in tern gloo; do
    /usr/bin/python3 "$src/tests/python/torchrun_env.py" "$n" "$here/torch_backend.py" "$backend" | tee -a "$out"
  done
done
