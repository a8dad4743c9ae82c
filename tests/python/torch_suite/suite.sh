#!/usr/bin/env bash
# suite.sh WORLD_SIZE [OUTDIR]: torch's own distributed suite (run_suite.py) with Gloo, then with
# tern, at WORLD_SIZE ranks, and compare.py's verdict on the two. OUTDIR keeps the per-test files
# (default: a temporary directory). About a minute per backend at WORLD_SIZE 2 on 2 cores.
set -u
ws=$1
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out"
export PYTHONPATH=${PYTHONPATH:-$(cd "$here/../../../python" && pwd)}  # a checkout's package
for b in gloo tern; do
  tmp=$(mktemp -d)
  TEMP_DIR=$tmp /usr/bin/python3 "$here/run_suite.py" "$b" "$ws" "$out/$b$ws.csv" >"$out/$b$ws.log" 2>&1
  rm -rf "$tmp"
  tail -1 "$out/$b$ws.log"
done
/usr/bin/python3 "$here/compare.py" "$out/gloo$ws.csv" "$out/tern$ws.csv"
