#!/usr/bin/env bash
# pccl_frontier.sh TERN [SIZES]: PCCL's headline comparison ("The Big Send-off", IPDPS 2026) on
# Frontier's nodes as `tern sim coll --frontier` models them: reduce_scatter, allgather and
# allreduce at 2048 ranks (256 nodes x 8), the flat ring against rhd and hier, on a fat tree of
# full bisection, the adaptively routed dragonfly of Frontier's groups and SimGrid's minimally
# routed one. One markdown table on stdout (docs/SCALE.md). SIZES: -b/-e/-f for tern sim coll
# (default "-b 64M -e 1G -f 4": 64, 256 and 1024 MiB). Rings are simulated with --steady 4
# (docs/SCALE.md). About 15 minutes of CPU a topology.
set -euo pipefail
tern=$1
sizes=${2:--b 64M -e 1G -f 4}
echo "| topology | collective | size | ring (ms) | rhd (ms) | hier-ring (ms) | hier-rhd (ms) | ring / hier-rhd |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for topo in fat-tree dragonfly dragonfly-minimal; do
  # shellcheck disable=SC2086
  "$tern" sim coll reduce_scatter,allgather,allreduce -n 2048 --frontier --topo "$topo" $sizes \
    -a ring,rhd,hier --csv --timeout 5000 --steady 4 |
    awk -F, -v topo="$topo" 'NR > 1 { t[$1, $6, $8] = $9 * 1e3; k[$1, $6] = 1 }
      END { for (c in k) { split(c, x, SUBSEP)
              printf "| %s | %s | %d MiB | %.2f | %.2f | %.2f | %.2f | %.2fx |\n", topo, x[1], x[2] / 1048576,
                t[c, "ring"], t[c, "rhd"], t[c, "hier-ring"], t[c, "hier-rhd"], t[c, "ring"] / t[c, "hier-rhd"] } }' |
    sort -t'|' -k3,3 -k4n
done
