#!/usr/bin/env bash
# demo.sh BUILD: the main job that `make demo` runs: `tern demo` (tools/tern/demo/demo.c; docs/DEMO.md
# explains it).
set -euo pipefail
build=${1:-build}
exec "$build/tern" demo
