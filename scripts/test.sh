#!/usr/bin/env bash
# test.sh: everything `make test` runs, in stages, each timed:
#   0. lint: formatting and cppcheck (scripts/lint.sh, `make lint`);
#   1. the normal build (-O3) and every test (the builds of stages 1-3 compile in the swarm's
#      failpoints, -DTERN_FAILPOINTS=ON, which `make build` leaves out of a release);
#   2. an ASan+UBSan build and every test again;
#   3. a TSan build and the tests labelled tsan (the threaded parts: progress engine, abort,
#      the swarm's listener and all-reduce threads; tests/tsan.supp holds OpenDHT's own races);
#   4. a clang build of the libFuzzer targets, each run on its corpus for FUZZ_SECONDS.
# STAGES="1 2" runs a subset. A stage that runs no test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
stages=${STAGES:-0 1 2 3 4}
fuzz_seconds=${FUZZ_SECONDS:-15}

build() {
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs"
}

run_ctest() {
  local dir=$1
  shift
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j"$jobs" "$@"
}

fuzz_all() {
  local dir=build-fuzz n=0
  for f in "$dir"/tests/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    local name corpus
    name=$(basename "$f")
    corpus=$(mktemp -d)
    cp tests/fuzz/corpus/"${name#fuzz_}"/* "$corpus"/ 2>/dev/null || true
    echo "test.sh: $name for ${fuzz_seconds}s"
    "$f" -max_total_time="$fuzz_seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
      "$corpus" >"$dir/$name.log" 2>&1 || { tail -40 "$dir/$name.log"; rm -rf "$corpus"; return 1; }
    grep -E '^stat::number_of_executed_units' "$dir/$name.log" || true
    rm -rf "$corpus"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || { echo "test.sh: no fuzz target was built" >&2; return 1; }
}

stage() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== test.sh: $name"
  "$@"
  echo "=== test.sh: $name passed in $((SECONDS - t0)) s"
}

for s in $stages; do
  case $s in
    0) stage "lint" scripts/lint.sh ;;
    1) stage "normal build" build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_FAILPOINTS=ON
       stage "tests" run_ctest build ;;
    2) stage "ASan+UBSan build" build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         -DTERN_SANITIZE=address,undefined -DTERN_FAILPOINTS=ON
       ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
         stage "tests under ASan+UBSan" run_ctest build-asan -LE nosan ;;
    3) stage "TSan build" build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_SANITIZE=thread \
         -DTERN_FAILPOINTS=ON
       TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp \
         stage "tests under TSan" run_ctest build-tsan -L tsan ;;
    4) stage "fuzz build" env CC=clang bash -c "$(declare -f build); build build-fuzz \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_FUZZ=ON -DTERN_TESTS=OFF -DTERN_WERROR=ON"
       stage "fuzzers" fuzz_all ;;
    *) echo "test.sh: no stage $s" >&2; exit 2 ;;
  esac
done
echo "test.sh: all stages passed"
