#!/usr/bin/env python3
"""chart.py FAMILY.csv OUT.png: the comparison chart of docs/PLANNING.md. For each policy, its
average JCT and its cost on each scenario of the family divided by the best of BACE-Pipe and
the four baselines on that scenario, as a mean with the range (min to max) over the scenarios.
Below 1 is better than every one of them."""
import collections, csv, sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(dict)
for r in rows:
    by[r["scenario"]][r["policy"]] = (float(r["avg_jct_h"]), float(r["cost_usd"]))
others = ["bace", "lcf", "ldf", "cr-lcf", "cr-ldf"]
policies = ["ours", "bace", "lcf", "ldf", "cr-lcf", "cr-ldf", "bace-noprio", "bace-nopath",
            "bace-nocost", "ours-online", "ours-fast", "ours-trim", "ours-nowait"]
ratios = {p: ([], []) for p in policies}
for sc, d in by.items():
    ran = [p for p in others if p in d]
    bj, bc = min(d[p][0] for p in ran), min(d[p][1] for p in ran)
    for p in policies:
        if p in d:
            ratios[p][0].append(d[p][0] / bj)
            ratios[p][1].append(d[p][1] / bc)

fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
for ax, k, title in [(axes[0], 0, "average JCT"), (axes[1], 1, "electricity cost")]:
    ys = range(len(policies))
    means = [sum(ratios[p][k]) / len(ratios[p][k]) for p in policies]
    lo = [m - min(ratios[p][k]) for p, m in zip(policies, means)]
    hi = [max(ratios[p][k]) - m for p, m in zip(policies, means)]
    colors = ["tab:green" if p == "ours" else "tab:blue" if p == "bace" else "tab:gray"
              for p in policies]
    ax.barh(list(ys), means, xerr=[lo, hi], color=colors, capsize=3)
    ax.axvline(1.0, color="black", lw=1)
    ax.set_title(f"{title} / best of BACE-Pipe and the baselines\n(mean, range over "
                 f"{len(by)} scenarios)")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(policies)
    ax.invert_yaxis()
    ax.set_xlim(0.4, 2.5)
    for y, m in zip(ys, means):
        ax.text(0.42, y, f"{m:.2f}", va="center", fontsize=8, color="white")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
