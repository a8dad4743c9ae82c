#!/usr/bin/env bash
# attack.sh TERN MODE: four keyed peers average one round in one group; one of them, holding the
# key, is hostile. MODE:
#   clip    it sends 1e6 with weight 1000 and the peers average with --clip 1: every honest peer
#           must end within 1% of the honest peers' mean (CenteredClip, src/swarm/clip.c);
#   noclip  the same without --clip: the honest peers are pulled to ~1e6 (what the weighted mean
#           does with a key holder that lies; the test asserts it, docs/SWARM.md quotes it);
#   nan     it sends NaN: every honest peer refuses its values (and its reduced part, NaN too)
#           and names it, and ends finite: the honest mean on the honest reducers' parts, its own
#           values on the hostile reducer's part (within 2% of the honest mean here).
source "$(dirname "$0")/lib.sh" "$1"
MODE=$2
common=(--run-id "attack-$$" --key "s3cret" --rounds 1 --dim 16 --target-group 4 --min-group 4
        --match-timeout 8 --timeout 5)
[ "$MODE" = clip ] && common+=(--clip 1)
case $MODE in
  clip | noclip) bad=(--value 1e6 --weight 1000) ;;
  nan) bad=(--value nan) ;;
  *) fail "unknown mode $MODE" ;;
esac
start_peer p0 --listen 127.0.0.1:0 "${common[@]}" --value 100
A=$(addr_of p0)
start_peer p1 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --value 101
start_peer p2 --listen 127.0.0.1:0 --join "$A" "${common[@]}" --value 102
start_peer evil --listen 127.0.0.1:0 --join "$A" "${common[@]}" "${bad[@]}"
for i in 0 1 2; do wait "$(eval echo \$PID_p$i)" || fail "p$i exited with an error"; done
wait "$PID_evil" || true
EVIL=$(awk '/^peer .* listening on/ { print $2; exit }' "$WORK/evil.out")
# The honest mean: element k = 101 + k mod 7 over k < 16, whose mean is 101 + 43/16.
honest=103.6875
for i in 0 1 2; do
  grep -q '^round 0 group 4 ' "$WORK/p$i.out" || fail "p$i was not in the group of 4"
  mean=$(awk '/^final/ { print $5 }' "$WORK/p$i.out")
  case $MODE in
    clip)
      close_to "$mean" "$honest" 1e-2 || fail "p$i ends at mean $mean, more than 1% from $honest"
      echo "clip: p$i ends at mean $mean (honest $honest)" ;;
    noclip)
      awk -v m="$mean" 'BEGIN { exit !(m > 9e5) }' || fail "p$i ends at $mean: expected ~1e6"
      echo "no clip: p$i ends at mean $mean (honest $honest)" ;;
    nan)
      case $mean in *nan* | *inf*) fail "p$i holds non-finite values: $mean" ;; esac
      grep -q "peer $EVIL .*sent non-finite values: refused\|peer $EVIL .*sent a result with non-finite values: refused" \
        "$WORK/p$i.err" || fail "p$i did not name $EVIL for its non-finite values"
      # its own values differ per peer on the hostile reducer's part; on the others, the mean
      close_to "$mean" "$honest" 2e-2 || fail "p$i ends at mean $mean, far from $honest"
      echo "nan: p$i refused $EVIL's values, ends at mean $mean" ;;
  esac
done
echo "OK: $MODE"
