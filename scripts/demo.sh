#!/usr/bin/env bash
# demo.sh BUILD: the main job that `make demo` runs.
set -euo pipefail
build=${1:-build}
exec "$build/tern" run -n 4 -- "$build/tern" bench allreduce -b 8 -e 64M -f 4
