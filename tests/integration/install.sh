#!/usr/bin/env bash
# install.sh SRC BUILD: what a user does: `make install PREFIX=...`, then builds examples/hello
# with pkg-config and with CMake's find_package(tern), and runs each under the installed
# `tern run -n 3`.
set -euo pipefail
src=$1 build=$2
prefix=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$prefix" "$work"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/tern.h" && test -x "$prefix/bin/tern"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
cc -Wall -Werror "$src/examples/hello/hello.c" $(pkg-config --cflags --libs tern) -o "$work/hello_pc"
cmake -S "$src/examples/hello" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
# the shared library must export the API and nothing of the internals
nm -D --defined-only "$prefix"/lib*/libtern.so* 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u > "$work/syms"
! grep -qvE '^tern_' "$work/syms" || { echo "install.sh: libtern.so exports non-tern symbols:"; grep -vE '^tern_' "$work/syms" | head; exit 1; }
for prog in "$work/hello_pc" "$work/cm/hello"; do
  out=$("$prefix/bin/tern" run -n 3 -- "$prog")
  echo "$out"
  [ "$(echo "$out" | grep -c 'sum of ranks = 3 (expected 3)')" -eq 3 ]
done
echo "install.sh: installed, built with pkg-config and with find_package(tern), ran 3 ranks"
