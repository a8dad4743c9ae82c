#!/usr/bin/env bash
# run.sh BUILD OUT.csv [RANKS...]: the torch.distributed benchmark (torch_backend.py) at each
# rank count (default 1 2 4) into OUT.csv: tern's backend and a Gloo group (loopback,
# GLOO_SOCKET_IFNAME=lo) in the same processes, timed in turns; `summary.py OUT.csv` makes
# docs/PYTORCH.md's speed tables from it.
set -eu
build=$1 out=$2
shift 2
ranks=${*:-1 2 4}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
export PYTHONPATH=$src/python TERN_LIBRARY=$build/libtern.so GLOO_SOCKET_IFNAME=lo TIMEOUT=600
echo "what,backend,ranks,bytes,us" >"$out"
for n in $ranks; do
  /usr/bin/python3 "$src/tests/python/torchrun_env.py" "$n" "$here/torch_backend.py" | tee -a "$out"
done
