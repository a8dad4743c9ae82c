#!/usr/bin/env bash
# select_hosts.sh TERN: the runtime selector across hosts, through `tern run` with pretend hosts
# (TERN_HOSTS: shared memory within a host, TCP across), 16 ranks as 2 hosts of 8, one allgather
# of 16 f32 a rank (`tern bench`, its result checked):
#   - with no tuning file the weights learned on the simulated cluster price it (every host has
#     their 8 ranks, select_learned.h): hier, by ring across the hosts (with two hosts, ring
#     and rhd are each one exchange across them, priced nearly alike), where the
#     phases of select_hosts.c alone pick flat rhd (tests/unit/select_grid.txt, "hosts n=16
#     ppn=8");
#   - a tuning file with rows measured at 2x8 decides instead (coll_tuning_select_hosts);
#   - one whose rows are for 2x4 only does not apply: the learned choice again.
set -u
tern=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "select_hosts.sh: $*"; exit 1; }
run() { # the algorithm rank 0's log names for the allgather
  TERN_HOSTS=2 TERN_DEBUG=INFO TERN_TIMEOUT=60 "$@" "$tern" run -n 16 -- \
    "$tern" bench allgather -b 1K -e 1K -n 1 -w 0 -c 1 >"$dir/out" 2>"$dir/err" ||
    fail "the run failed: $(tail -5 "$dir/err")"
  grep -q "Out of bounds values : 0 OK" "$dir/out" || fail "wrong results: $(cat "$dir/out")"
  grep -m1 " r0 .*allgather #0: 16 elements" "$dir/err" | sed 's/.*(sum), //; s/ over .*//'
}
got=$(run env)
[ "$got" = "hier (within hosts ring, across hosts ring; 2 hosts x 8 lanes)" ] ||
  fail "no tuning file: want hier by ring across hosts, got '$got'"
printf 'tern-tuning 2\nuse table\ntime tcp 2x8 allgather 64 direct 1e-06\ntime tcp 2x8 allgather 64 rhd 5e-06\n' \
  >"$dir/t"
got=$(run env TERN_TUNING="$dir/t")
[ "$got" = "direct" ] || fail "a tuning file measured at 2x8: want direct, got '$got'"
sed -i 's/2x8/2x4/' "$dir/t"
got=$(run env TERN_TUNING="$dir/t")
[ "$got" = "hier (within hosts ring, across hosts ring; 2 hosts x 8 lanes)" ] ||
  fail "a tuning file measured at 2x4 only: want the learned choice, got '$got'"
echo "select_hosts.sh: learned weights, then the tuning file's rows at 2x8, chose at run time"
