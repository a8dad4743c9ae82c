#!/usr/bin/env bash
# pccl_frontier.sh TERN [SIZES]: PCCL's headline comparison ("The Big Send-off", IPDPS 2026) on
# Frontier's nodes as `tern sim coll --frontier` models them: reduce_scatter, allgather and
# allreduce at 2048 ranks (256 nodes x 8), the flat ring against rhd and hier, on SimGrid's fat
# tree and dragonfly. One markdown table on stdout (docs/SCALE.md). SIZES: -b/-e/-f for tern
# sim coll (default "-b 64M -e 1G -f 16": 64 MiB and 1 GiB). About 10 minutes of CPU a topology.
set -euo pipefail
tern=$1
sizes=${2:--b 64M -e 1G -f 16}
echo "| topology | collective | size | ring (ms) | rhd (ms) | hier-ring (ms) | hier-rhd (ms) | ring / best hier |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for topo in fat-tree dragonfly; do
  # shellcheck disable=SC2086
  "$tern" sim coll reduce_scatter,allgather,allreduce -n 2048 --frontier --topo "$topo" $sizes \
    -a ring,rhd,hier --csv --timeout 3000 |
    awk -F, -v topo="$topo" 'NR > 1 { t[$1, $6, $8] = $9 * 1e3; k[$1, $6] = 1 }
      END { for (c in k) { split(c, x, SUBSEP); h = t[c, "hier-ring"] < t[c, "hier-rhd"] ? t[c, "hier-ring"] : t[c, "hier-rhd"]
              printf "| %s | %s | %d MiB | %.2f | %.2f | %.2f | %.2f | %.1fx |\n", topo, x[1], x[2] / 1048576,
                t[c, "ring"], t[c, "rhd"], t[c, "hier-ring"], t[c, "hier-rhd"], t[c, "ring"] / h } }' |
    sort -t'|' -k3,3 -k4n
done
