#!/usr/bin/env bash
# insecure.sh TERN: without a key, `tern swarm` refuses any address that is not loopback (its
# listen address or a --join address) before it binds or sends anything, and says how to go on;
# with --insecure it runs, and its log says it is insecure; with a key it runs, silently. The
# non-loopback addresses used: 192.0.2.1 (TEST-NET-1, documentation only; refused, so never
# contacted), the wildcard 0.0.0.0, and this machine's own non-loopback address, if it has one
# (traffic to it stays in this machine's kernel).
source "$(dirname "$0")/lib.sh" "$1"
refused() { # refused NAME WHAT ARGS...: tern swarm ARGS must fail at once, naming WHAT
  local name=$1 what=$2
  shift 2
  local t0=$SECONDS
  if "$TERN" swarm --run-id "ins-$$" --rounds 1 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    fail "$name: ran without a key on $what"
  fi
  grep -q "no key, and $what is not a loopback address" "$WORK/$name.err" ||
    fail "$name: no refusal naming $what"
  grep -q -- "--insecure" "$WORK/$name.err" || fail "$name: the refusal does not say --insecure"
  [ $((SECONDS - t0)) -le 2 ] || fail "$name: the refusal took $((SECONDS - t0)) s"
  echo "refused: $what"
}
refused join 192.0.2.1:9 --listen 127.0.0.1:0 --join 192.0.2.1:9
refused wildcard 0.0.0.0 --listen 0.0.0.0:0
LOCAL=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
if [ -z "$LOCAL" ]; then
  echo "OK: refusals (this machine has no non-loopback address for the runs)"
  exit 0
fi
refused local "$LOCAL" --listen "$LOCAL:0"
# Two peers on the machine's own address: with --insecure (warned), then with a key (no warning).
pair() { # pair TAG ARGS...: peers TAGa and TAGb average 2 rounds; both must be in a pair each round
  local tag=$1 p
  shift
  local args=(--run-id "ins-$tag-$$" --rounds 2 --dim 8 --target-group 2 --min-group 2
              --match-timeout 5 "$@")
  start_peer "${tag}a" --listen "$LOCAL:0" "${args[@]}" --value 0
  start_peer "${tag}b" --listen "$LOCAL:0" --join "$(addr_of "${tag}a")" "${args[@]}" --value 10
  for p in a b; do
    wait "$(eval echo \$PID_$tag$p)" || fail "$tag$p exited with an error"
    [ "$(grep -c '^round .* group 2 failed 0' "$WORK/$tag$p.out")" -eq 2 ] ||
      fail "$tag$p did not average with its partner on $LOCAL"
  done
}
pair open --insecure
grep -q "INSECURE: no key on $LOCAL" "$WORK/opena.err" || fail "--insecure ran without a warning"
pair keyed --key s3cret
grep -q "INSECURE" "$WORK/keyeda.err" "$WORK/keyedb.err" && fail "a keyed peer was called insecure"
echo "OK: without a key, $LOCAL, 0.0.0.0 and 192.0.2.1 are refused; --insecure runs (warned), a key runs"
