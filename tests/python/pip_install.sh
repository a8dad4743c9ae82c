#!/usr/bin/env bash
# pip_install.sh BUILD PYTHON: `pip install ./python` with no network at all (a network namespace
# of its own: unshare -n) into a venv made with --system-site-packages over Debian's torch; the
# installed package, run from outside the checkout with no PYTHONPATH or TERN_LIBRARY, loads the
# libtern bundled in its wheel and serves dist.init_process_group("tern") on two ranks. Then the
# pkg-config route: without the bundled copy, it loads the libtern of a `cmake --install` prefix
# that PKG_CONFIG_PATH names.
set -u
build=$1 py=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "pip_install.sh: $*"; echo "0 passed, 1 failed"; exit 1; }
"$py" -m venv --system-site-packages "$dir/venv" || fail "no venv"
vpy=$dir/venv/bin/python
env -u PYTHONPATH TERN_LIBRARY="$build/libtern.so" unshare -n "$dir/venv/bin/pip" install \
  --disable-pip-version-check "$src/python" >"$dir/pip.log" 2>&1 ||
  { cat "$dir/pip.log"; fail "pip install ./python failed offline"; }
cd "$dir" || fail "cd"
found=$(env -u PYTHONPATH -u TERN_LIBRARY "$vpy" -c 'import tern; print(tern.library_path)') ||
  fail "import tern failed in the venv"
case $found in
  "$dir"/venv/*/tern/libtern.so.0) echo "pip_install.sh: the venv's tern loads its bundled $found" ;;
  *) fail "the venv's tern loaded $found, not its bundled copy" ;;
esac
cat >"$dir/two.py" <<'PY'
import sys, torch, torch.distributed as dist, tern
dist.init_process_group("tern")
x = torch.ones(3); dist.all_reduce(x)
sys.stdout.write(f"sum {x.tolist()}\n"); sys.stdout.flush()
PY
out=$(env -u PYTHONPATH -u TERN_LIBRARY TIMEOUT=60 "$vpy" "$src/tests/python/torchrun_env.py" 2 "$dir/two.py") ||
  fail "two ranks of the venv's backend failed: $out"
[ "$(echo "$out" | grep -c 'sum \[2.0, 2.0, 2.0\]')" -eq 2 ] || fail "wrong sums: $out"
cmake --install "$build" --prefix "$dir/prefix" >"$dir/install.log" 2>&1 || fail "cmake --install failed"
rm "$(dirname "$found")/libtern.so.0"
found=$(env -u PYTHONPATH -u TERN_LIBRARY PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig" "$vpy" -c \
  'import tern; print(tern.library_path)') || fail "import tern without the bundled copy failed"
case $(readlink -f "$found") in
  "$dir"/prefix/*) echo "pip_install.sh: without its copy, the venv's tern loads $found (pkg-config)" ;;
  *) fail "without its copy, the venv's tern loaded $found, not the prefix's" ;;
esac
echo "1 passed, 0 failed"
