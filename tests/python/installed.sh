#!/usr/bin/env bash
# installed.sh BUILD PYTHON: `cmake --install` into a fresh prefix; the binding installed there
# must find the libtern.so installed beside it on its own (no TERN_LIBRARY, no build tree), and
# the installed tern command must run two ranks of it through an allreduce.
set -u
build=$1 py=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "installed.sh: $*"; echo "0 passed, 1 failed"; exit 1; }
cmake --install "$build" --prefix "$dir" >"$dir/install.log" 2>&1 || { cat "$dir/install.log"; fail "install failed"; }
site=$(echo "$dir"/lib/python3*/dist-packages)
[ -f "$site/tern/__init__.py" ] || fail "no tern package under $dir/lib"
[ -f "$dir/share/tern/digits.csv" ] || fail "the digits data set was not installed"
cd "$dir" || fail "cd"
found=$(env -u TERN_LIBRARY PYTHONPATH="$site" "$py" -c 'import tern; print(tern.library_path)') ||
  fail "import tern failed"
case $(readlink -f "$found") in
  "$dir"/*) echo "installed.sh: the installed binding loads $found" ;;
  *) fail "the installed binding loaded $found, not the library installed with it" ;;
esac
out=$(env -u TERN_LIBRARY PYTHONPATH="$site" "$dir/bin/tern" run -n 2 -- "$py" -c '
import numpy as np, tern
import sys
c = tern.init(); x = np.ones(3, np.float32); c.allreduce(x)
sys.stdout.write("sum %s\n" % x.tolist()); sys.stdout.flush()  # one write: ranks share the pipe') ||
  fail "two ranks of the installed binding failed: $out"
[ "$(echo "$out" | grep -c 'sum \[2.0, 2.0, 2.0\]')" -eq 2 ] || fail "wrong sums: $out"
echo "1 passed, 0 failed"
