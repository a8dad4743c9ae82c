#!/usr/bin/python3
"""plot.py: docs/SCALE.md and its figures, from the stored results of the sweep.

Reads bench/scale/results/sweep.csv (sweep.py), results/validation.md (`tern sim coll
validate`), results/train.txt (train.py's held-out accuracy), results/sensitivity.md (run.sh's
2048-rank rings with slower NICs), results/topologies.md (topologies.sh) and
results/timings.txt (run.sh's wall times), ../hosts/results/hosts.md (bench/hosts/run.sh); draws docs/scale/winners.png (the winning algorithm over size x ranks, one panel
per collective) and docs/scale/time_<collective>.png (time against ranks per algorithm at
1 MiB and 64 MiB; hollow triangles for the runs the sweep only bounded), and writes
docs/SCALE.md around them with the PCCL comparison table.
usage: plot.py [--results bench/scale/results] [--docs docs]
"""
import argparse
import collections
import csv
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

COLLS = ["allreduce", "reduce_scatter", "allgather"]
ALGOS = ["ring", "rhd", "tree", "direct", "rd", "bruck", "hier-ring", "hier-rhd"]
COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#ff7f0e", "#17becf"]


def human(nbytes):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div:
            return "%d %s" % (nbytes // div, unit)
    return "%d B" % nbytes


def load(path):
    """{(coll, ranks, bytes): {algo: (time or nan, bound)}}"""
    cells = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        cells[(r["collective"], int(r["ranks"]), int(r["bytes"]))][r["algorithm"]] = (
            float(r["time_s"]), float(r["bound_s"]))
    return cells


def best(algos):
    sim = {a: t for a, (t, _) in algos.items() if math.isfinite(t)}
    a = min(sim, key=sim.get)
    return a, sim[a]


def heatmaps(cells, out):
    ranks = sorted({n for _, n, _ in cells})
    sizes = sorted({b for _, _, b in cells})
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2), sharey=True)
    cmap = ListedColormap(COLORS)
    for ax, coll in zip(axes, COLLS):
        grid = [[math.nan] * len(ranks) for _ in sizes]
        for i, b in enumerate(sizes):
            for j, n in enumerate(ranks):
                if (coll, n, b) in cells:
                    a, _ = best(cells[(coll, n, b)])
                    grid[i][j] = ALGOS.index(a)
                    ax.text(j, i, a.replace("hier-", "h-"), ha="center", va="center", fontsize=6.5)
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(ALGOS) - 0.5, origin="lower",
                  aspect="auto")
        ax.set_xticks(range(len(ranks)), [str(n) for n in ranks], rotation=45)
        ax.set_yticks(range(len(sizes)), [human(b) for b in sizes])
        ax.set_title(coll)
        ax.set_xlabel("ranks (8 per host)")
    axes[0].set_ylabel("size (whole buffer)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS]
    fig.legend(handles, ALGOS, loc="lower center", ncol=len(ALGOS))
    fig.suptitle("Fastest algorithm, simulated (tern sim coll, flat cluster, 25 GB/s 2 us NICs)")
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def time_plots(cells, coll, out, sizes=(1 << 20, 64 << 20)):
    fig, axes = plt.subplots(1, len(sizes), figsize=(13, 4.8))
    for ax, b in zip(axes, sizes):
        for algo, color in zip(ALGOS, COLORS):
            runs = sorted((n, v[algo]) for (c, n, bb), v in cells.items()
                          if c == coll and bb == b and algo in v)
            sim = [(n, t) for n, (t, _) in runs if math.isfinite(t)]
            bnd = [(n, lb) for n, (t, lb) in runs if not math.isfinite(t)]
            if sim:
                ax.plot([p[0] for p in sim], [p[1] * 1e3 for p in sim], "o-", color=color,
                        label=algo, ms=3)
            if bnd:  # only bounded (sweep.py): the time is above these
                ax.plot([p[0] for p in bnd], [p[1] * 1e3 for p in bnd], "^:", color=color,
                        ms=4, mfc="none")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("ranks (8 per host)")
        ax.set_ylabel("time (ms)")
        ax.set_title("%s, %s" % (coll, human(b)))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[-1].text(0.01, 0.01, "hollow triangles: lower bounds of runs not simulated",
                  transform=axes[-1].transAxes, fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def pccl_table(cells, ranks=2048):
    """ring against rhd and hier at 2048 ranks, 1 to 64 MiB; a ring only bounded reads ">=". """
    lines = ["| collective | size | ring (ms) | rhd (ms) | hier, best inner (ms) | ring / rhd | "
             "ring / hier |", "|---|---:|---:|---:|---:|---:|---:|"]
    for coll in COLLS:
        for b in sorted({b for c, n, b in cells if c == coll and n == ranks}):
            if b < 1 << 20 or b > 64 << 20:
                continue
            v = cells[(coll, ranks, b)]
            ring, bound = v["ring"]
            sim = math.isfinite(ring)
            ring = ring if sim else bound
            rhd = v["rhd"][0]
            hier = min(v[a][0] for a in ("hier-ring", "hier-rhd") if a in v)
            ge = "" if sim else ">= "
            lines.append("| %s | %s | %s%.2f | %.2f | %.2f | %s%.1fx | %s%.1fx |" % (
                coll, human(b), ge, ring * 1e3, rhd * 1e3, hier * 1e3, ge, ring / rhd, ge,
                ring / hier))
    return "\n".join(lines)


def validation_summary(text):
    """Per rank count: cells, cells within 25%, mean and extreme errors of the table."""
    errs = collections.defaultdict(list)
    for line in text.splitlines():
        f = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(f) == 7 and f[0].isdigit():
            errs[int(f[0])].append(float(f[6].split("%")[0]))
    lines = ["| ranks | cells | within 25% | mean abs error | range |", "|---:|---:|---:|---:|---|"]
    for n, e in sorted(errs.items()):
        lines.append("| %d | %d | %d | %.1f%% | %+.0f%% to %+.0f%% |" % (
            n, len(e), sum(abs(x) <= 25 for x in e), sum(map(abs, e)) / len(e), min(e), max(e)))
    return "\n".join(lines)


def read(path, default="(not run)"):
    return open(path).read().strip() if os.path.exists(path) else default


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(here, "results"))
    ap.add_argument("--docs", default=os.path.join(root, "docs"))
    a = ap.parse_args()
    cells = load(os.path.join(a.results, "sweep.csv"))
    figs = os.path.join(a.docs, "scale")
    os.makedirs(figs, exist_ok=True)
    heatmaps(cells, os.path.join(figs, "winners.png"))
    for coll in COLLS:
        time_plots(cells, coll, os.path.join(figs, "time_%s.png" % coll))
    template = open(os.path.join(here, "SCALE.md.in")).read()
    doc = template.format(
        pccl=pccl_table(cells), validation=read(os.path.join(a.results, "validation.md")),
        validation_summary=validation_summary(read(os.path.join(a.results, "validation.md"))),
        train=read(os.path.join(a.results, "train.txt")),
        timings=read(os.path.join(a.results, "timings.txt")),
        sensitivity=read(os.path.join(a.results, "sensitivity.md")),
        topologies=read(os.path.join(a.results, "topologies.md")),
        pccl_frontier=read(os.path.join(a.results, "pccl_frontier.md")),
        hosts=read(os.path.join(here, "..", "hosts", "results", "hosts.md")),
        cells=len(cells), rows=sum(len(v) for v in cells.values()),
        simulated=sum(math.isfinite(t) for v in cells.values() for t, _ in v.values()))
    open(os.path.join(a.docs, "SCALE.md"), "w").write(doc)


if __name__ == "__main__":
    main()
