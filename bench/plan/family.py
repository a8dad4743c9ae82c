#!/usr/bin/env python3
"""family.py TERN OUTDIR [FIRST-LAST] [--check] [--no-fixtures]: every policy on a generated family of scenarios, and how tern's
`ours` compares with BACE-Pipe and the four baselines on each (docs/PLANNING.md, "A policy
that wins").

The family: random 6-region clusters of three GPU types (A6000, A100, H100) with 24 jobs
(`tern plan gen --random`), each varied by `tern plan gen`: bandwidth x0.3, x1, x3 and x30, GPUs
x0.5 and x1, hourly prices (a daily curve of +-20-60% around each region's price), 32 or 16
micro-batches; seeds FIRST..LAST (1-3); plus the two fixtures (the six regions with 24 jobs, and random
pools on the ten AWS regions' links with 24 jobs) unless --no-fixtures. Writes
OUTDIR/family.csv (one row per scenario and policy) and prints the summary as markdown; with
--check it fails unless ours' mean JCT and mean cost are both at least 10% below the mean of the
best other policy on each scenario, and ours is within 2% of every other policy on both in
every scenario. Also prints, against each of BACE-Pipe and the four
baselines, ours' worst scenario on each metric (and that of ours-online, its first member,
alone), and which member the portfolio kept.
"""
import collections, csv, io, os, subprocess, sys

check = "--check" in sys.argv
args = [a for a in sys.argv[1:] if a != "--check"]
tern, out = args[0], args[1]
first, last = (int(x) for x in (args[2] if len(args) > 2 else "1-3").split("-"))
fixtures = "--no-fixtures" not in sys.argv
others = ["bace", "lcf", "ldf", "cr-lcf", "cr-ldf"]
os.makedirs(out, exist_ok=True)


def gen(args, path):
    subprocess.run([tern, "plan", "gen", *args, "-o", path], check=True, stderr=subprocess.DEVNULL)
    return path


def compare(path):
    r = subprocess.run([tern, "sim", "plan", path, "--compare", "--csv"], check=True,
                       capture_output=True, text=True)
    return {row["policy"]: row for row in csv.DictReader(io.StringIO(r.stdout))}


scenarios = []
for seed in range(first, last + 1):
    base = gen(["--random", "--regions", "6", "--jobs", "24", "--seed", str(seed)],
               f"{out}/base-{seed}.json")
    for bw in ["0.3", "1", "3", "30"]:
        for gpus in ["0.5", "1"]:
            mb = "16" if (seed + int(float(bw) * 10) + int(float(gpus) * 2)) % 2 else "32"
            name = f"s{seed}-bw{bw}-g{gpus}-m{mb}"
            scenarios.append((name, gen([base, "--bandwidth", bw, "--gpus", gpus, "--jobs", "24",
                                         "--seed", str(seed), "--hourly", "--microbatches", mb],
                                        f"{out}/{name}.json")))
if fixtures:
  scenarios.append(("fixture-24", gen(["data/scenarios/geo-six-regions.json", "--jobs", "24",
                                     "--seed", "1"], f"{out}/fixture-24.json")))
  scenarios.append(("aws-24", gen(["--links", "data/scenarios/aws-10-regions.json", "--jobs", "24",
                                 "--seed", "1"], f"{out}/aws-24.json")))

rows, summary = [], []
for name, path in scenarios:
    res = compare(path)
    for p, r in res.items():
        rows.append([name, p, r["avg_jct_h"], r["cost_usd"], r["planning_ms"]])
    if "ours" not in res:
        continue
    ours_j, ours_c = float(res["ours"]["avg_jct_h"]), float(res["ours"]["cost_usd"])
    ran = [p for p in others if p in res]
    best_j = min(float(res[p]["avg_jct_h"]) for p in ran)
    best_c = min(float(res[p]["cost_usd"]) for p in ran)
    worst_j = max((ours_j / float(res[p]["avg_jct_h"]) - 1) * 100 for p in ran)
    worst_c = max((ours_c / float(res[p]["cost_usd"]) - 1) * 100 for p in ran)
    summary.append((name, ours_j, best_j, ours_c, best_c, worst_j, worst_c))

with open(f"{out}/family.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["scenario", "policy", "avg_jct_h", "cost_usd", "planning_ms"])
    w.writerows(rows)

print("| scenario | ours JCT (h) | best other JCT | ours cost (USD) | best other cost | "
      "ours vs best JCT | ours vs best cost |")
print("|---|---|---|---|---|---|---|")
for n, oj, bj, oc, bc, wj, wc in summary:
    print(f"| {n} | {oj:.1f} | {bj:.1f} | {oc:.0f} | {bc:.0f} | {100*(oj/bj-1):+.1f}% | "
          f"{100*(oc/bc-1):+.1f}% |")
k = len(summary)
ours_j, ours_c = sum(s[1] for s in summary), sum(s[3] for s in summary)
best_j, best_c = sum(s[2] for s in summary), sum(s[4] for s in summary)
by_policy = collections.defaultdict(lambda: [0.0, 0.0])
for n, p, j, c, _ in rows:
    if p in others:
        by_policy[p][0] += float(j)
        by_policy[p][1] += float(c)
one_j = min(v[0] for v in by_policy.values())
one_c = min(v[1] for v in by_policy.values())
print(f"\nover {k} scenarios, ours' mean against the best single other policy's mean: JCT "
      f"{100*(ours_j/one_j-1):+.1f}%, cost {100*(ours_c/one_c-1):+.1f}%")
print(f"ours' mean against the mean of the best other on each scenario: JCT "
      f"{100*(ours_j/best_j-1):+.1f}%, cost {100*(ours_c/best_c-1):+.1f}%")
print(f"scenarios where ours is more than 2% worse than some policy: JCT "
      f"{sum(1 for s in summary if s[5] > 2)}, cost {sum(1 for s in summary if s[6] > 2)} of {k}")

# ours (and its members alone) against every other policy: the worst scenario on each metric
by = collections.defaultdict(dict)
for n, p, j, c, _ in rows:
    by[n][p] = (float(j), float(c))
print("\n| vs | ours: worst JCT (scenario) | ours: worst cost (scenario) | "
      "ours-online alone: worst JCT | ours-online alone: worst cost |")
print("|---|---|---|---|---|")
for o in others:
    cells = []
    for me in ["ours", "ours-online"]:
        for m in (0, 1):
            worst = max(((by[n][me][m] / by[n][o][m] - 1) * 100, n) for n in by
                        if me in by[n] and o in by[n])
            cells.append(f"{worst[0]:+.1f}% ({worst[1]})" if me == "ours" else f"{worst[0]:+.1f}%")
    print(f"| {o} | " + " | ".join(cells) + " |")
chosen = collections.Counter(
    next((m for m in ["ours-online", "ours-nowait", "ours-fast", "ours-fastest", "ours-speed", "ours-prio"] if m in by[n] and by[n][m] == by[n]["ours"]), "?")
    for n in by if "ours" in by[n])
print(f"\nthe portfolio kept: " + ", ".join(f"{m} in {c}" for m, c in chosen.most_common()) +
      f" of {sum(chosen.values())} scenarios")
if check and (ours_j > 0.9 * best_j or ours_c > 0.9 * best_c):
    sys.exit("family.py: ours is not 10% below the best other on the mean of both")
if check and any(s[5] > 2 or s[6] > 2 for s in summary):
    sys.exit("family.py: ours is more than 2% worse than some policy on some scenario")
