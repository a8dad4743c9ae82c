#!/usr/bin/python3
"""plot.py: bench/peers' figures: for each collective and transport, time and busbw against
size for tern and every peer, n = 2 and 4 side by side, from RESULTS/medians.csv (aggregate.py).

    /usr/bin/python3 bench/peers/plot.py --results bench/peers/results --out docs/perf

writes OUT/<collective>-<transport>.png (python3-matplotlib, Debian's /usr/bin/python3).
"""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLLS = ["allreduce", "reduce_scatter", "allgather", "broadcast"]
TOOLS = {"shm": ["tern", "ompi", "mpich"], "tcp": ["tern", "ompi", "mpich", "gloo"]}
STYLE = {"tern": ("C3", "o", 2.2), "ompi": ("C0", "s", 1.2), "mpich": ("C2", "^", 1.2),
         "gloo": ("C1", "v", 1.2)}


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2 * (n - 1) / n
    return 1.0 if coll == "broadcast" else (n - 1) / n


def size_label(b):
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= k:
            return f"{b // k}{unit}"
    return str(b)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    data = defaultdict(dict)  # (tool, tr, n, coll) -> {bytes: us}
    with open(f"{a.results}/medians.csv") as f:
        for r in csv.DictReader(f):
            data[(r["tool"], r["transport"], int(r["n"]), r["coll"])][int(r["bytes"])] = float(
                r["time_us"])
    os.makedirs(a.out, exist_ok=True)
    ns = sorted({k[2] for k in data if k[2] <= 4})
    for coll in COLLS:
        for tr in ("shm", "tcp"):
            fig, axes = plt.subplots(2, len(ns), figsize=(5.5 * len(ns), 7.5), squeeze=False)
            for j, n in enumerate(ns):
                for tool in TOOLS[tr]:
                    pts = sorted(data.get((tool, tr, n, coll), {}).items())
                    if not pts:
                        continue
                    xs = [b for b, _ in pts]
                    color, marker, width = STYLE[tool]
                    label = tool if tool == "gloo" else f"{tool}-{tr}"
                    axes[0][j].plot(xs, [t for _, t in pts], color=color, marker=marker,
                                    lw=width, ms=4, label=label)
                    axes[1][j].plot(xs, [b / (t * 1e-6) / 1e9 * bus_factor(coll, n) for b, t in pts],
                                    color=color, marker=marker, lw=width, ms=4, label=label)
                for i, what in enumerate(("time per call (us)", "busbw (GB/s)")):
                    ax = axes[i][j]
                    ax.set_xscale("log", base=2)
                    ax.set_yscale("log")
                    ax.grid(True, which="both", alpha=0.3)
                    ax.set_ylabel(what)
                    xs = sorted({b for (t, r, m, c), d in data.items()
                                 if r == tr and m == n and c == coll for b in d})
                    ax.set_xticks(xs)
                    ax.set_xticklabels([size_label(b) for b in xs], rotation=60, fontsize=7)
                    ax.set_xlabel("message size (whole buffer, bytes)")
                    ax.set_title(f"{coll}, {tr}, n = {n}" + (" (2 cores: oversubscribed)" if n > 2
                                                               else ""), fontsize=10)
                    ax.legend(fontsize=8)
            fig.suptitle(f"{coll} over {tr}: tern and its peers "
                         "(median of rounds; bench/peers/run.sh)", fontsize=11)
            fig.tight_layout()
            path = f"{a.out}/{coll}-{tr}.png"
            fig.savefig(path, dpi=80)
            plt.close(fig)
            print(f"plot.py: wrote {path}")


if __name__ == "__main__":
    main()
