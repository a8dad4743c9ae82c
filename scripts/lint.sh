#!/usr/bin/env bash
# lint.sh: what `make lint` checks (and `make test` first of all):
#   1. every C file under src/, tools/, include/ and tests/ is formatted as .clang-format says
#      (clang-format --dry-run; `scripts/lint.sh --fix` rewrites them in place);
#   2. cppcheck finds nothing in src/ and tools/ at the levels warning and portability (style
#      is left out: it is mostly taste, and taste is clang-format's job);
#   3. no include climbs a layer: a file under src/<layer>/ includes headers of its own layer and
#      of those before it in CMakeLists.txt's TERN_LAYERS only (core < net < comm < coll ...,
#      docs/CONTRIBUTING.md), and include/tern.h none of src/.
# Exits non-zero naming each file and finding.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files 'src/*.[ch]' 'tools/*.[ch]' 'include/*.h' 'tests/*.[ch]')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi

status=0
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/lint-format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/lint-format.$$ | cut -d: -f1 | sort -u |
    sed 's/^/lint: not formatted (scripts\/lint.sh --fix): /'
  status=1
fi
rm -f /tmp/lint-format.$$

if ! cppcheck --quiet --enable=warning,portability --std=c11 --inline-suppr -I include -I src \
  --error-exitcode=1 --template='{file}:{line}: {severity}: {message} [{id}]' src tools; then
  status=1
fi
read -ra layers < <(sed -n 's/^set(TERN_LAYERS \(.*\))$/\1/p' CMakeLists.txt)
if [ "${#layers[@]}" -lt 2 ]; then
  echo "lint: no TERN_LAYERS list in CMakeLists.txt"
  status=1
fi
climbs=$(git ls-files 'src/*.[ch]' 'include/*.h' | while read -r f; do
  grep -Ho '^#include "[a-z_]*/' "$f" | sed 's|:#include "| |; s|/$||'
done | awk -v order="${layers[*]}" '
  BEGIN { n = split(order, l, " "); for (i = 1; i <= n; i++) rank[l[i]] = i }
  { split($1, p, "/"); from = p[1] == "include" ? 0 : rank[p[2]]; to = rank[$2] }
  to && (from == 0 ? 1 : to > from) { print "lint: " $1 " includes " $2 "/, a layer above its own" }')
if [ -n "$climbs" ]; then
  echo "$climbs"
  status=1
fi
[ "$status" -eq 0 ] &&
  echo "lint: ${#files[@]} files formatted, cppcheck clean, no include climbs a layer"
exit "$status"
