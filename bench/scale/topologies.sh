#!/usr/bin/env bash
# topologies.sh TERN: one markdown table of allreduce times on each topology `tern sim coll`
# builds: 512 ranks (64 hosts x 8) flat, on SimGrid's default fat tree, on the adaptively routed
# dragonfly (4 groups of 16 hosts, 9 global links each: Frontier's 57% of injection) and on
# SimGrid's minimally routed one, and 40 ranks over the 10 regions of the AWS fixture (4 ranks
# a region). Every message simulated. Written into SCALE.md.
set -euo pipefail
tern=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
echo "| platform | size | ring (ms) | rhd (ms) | hier-ring (ms) | hier-rhd (ms) |"
echo "|---|---:|---:|---:|---:|---:|"
row() {
  local name=$1
  shift
  "$tern" sim coll allreduce "$@" -b 1M -e 64M -f 64 -a ring,rhd,hier --csv |
    awk -F, -v name="$name" 'NR > 1 { t[$6, $8] = $9 * 1e3; s[$6] = 1 }
      END { for (b in s) printf "| %s | %d MiB | %.2f | %.2f | %.2f | %.2f |\n", name, b / 1048576,
            t[b, "ring"], t[b, "rhd"], t[b, "hier-ring"], t[b, "hier-rhd"] }' | sort -t'|' -k3n
}
row "flat, 512 ranks" -n 512 --rph 8
row "fat tree, 512 ranks" -n 512 --rph 8 --topo fat-tree
row "dragonfly (adaptive), 512 ranks" -n 512 --rph 8 --topo dragonfly --topo-params 16,9
row "dragonfly-minimal, 512 ranks" -n 512 --rph 8 --topo dragonfly-minimal
row "AWS, 10 regions, 40 ranks" -n 40 --rph 4 --topo geo --geo "$root/data/scenarios/aws-10-regions.json"
