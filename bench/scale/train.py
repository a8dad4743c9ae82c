#!/usr/bin/python3
"""train.py: the learned selector, fitted on the simulated sweep (sweep.py's CSV).

Each row of the sweep carries the cost model's terms of rank 0's schedule, priced per phase on
the host (shm_*) or across hosts (net_*): phases' latencies, bytes of the busier direction, bytes
reduced, messages beyond a phase's first (coll_sched_cost_hosts with unit constants). For each
(collective, algorithm) the selector predicts time as a non-negative weighting of those eight
terms; the weights minimise the squared *relative* error over the training cells (a cell: one
collective, rank count and size), each held near the platform's own constant (fit()). The
selector picks the least predicted time.

Cells are split once, by a rule the C test (tests/unit/test_select_learned.c) repeats: a cell is
held out when (collective + log2 ranks + log4 (bytes / 1 KiB)) % 5 == 0, a fifth of the cells,
spread over every rank count and size, and so is every cell of 128 and of 4096 ranks (16 and 512
hosts): a host count inside the trained range and one beyond it, none of whose cells the fit
sees. The weights are fitted on the others only. A held-out
cell counts as a hit when the pick's simulated time is within 5% of the cell's best; an
algorithm the sweep only bounded (sweep.py) is at least 5% behind the best, so picking it is a
miss.

Writes src/coll/select_learned_table.c (the weights) and prints the held-out accuracy.
usage: train.py [--csv bench/scale/results/sweep.csv] [--out src/coll/select_learned_table.c]
"""
import argparse
import collections
import csv
import math
import os
import shutil
import subprocess
import textwrap

import numpy as np

TERMS = ["shm_alpha", "shm_beta", "shm_gamma", "shm_o", "net_alpha", "net_beta", "net_gamma",
         "net_o"]
KINDS = {"allreduce": 0, "reduce_scatter": 1, "allgather": 2}
MARGIN = 1.05
HELD_RANKS = (128, 4096)  # whole rank counts (and host counts) absent from training
# The sweep's platform (tern sim coll's cluster defaults), in the order of each half of TERMS:
# alpha (latency + 1 us of CPU a message), beta, gamma, o. The C selector scales each weight by
# a site's constant over this one (select_learned.h).
PLATFORM = {"intra": (0.34e-6 + 2e-6, 1 / 12.45e9, 1 / 8.10e9, 1e-6),
            "inter": (2e-6 + 2e-6, 1 / 25e9, 1 / 8.10e9, 1e-6)}


def held_out(kind, ranks, nbytes):
    if ranks in HELD_RANKS:
        return True
    return (KINDS[kind] + int(math.log2(ranks)) + int(math.log2(nbytes // 1024)) // 2) % 5 == 0


def load(path):
    cells = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        x = np.array([float(r[t]) for t in TERMS])
        if not np.all(np.isfinite(x)):
            continue
        cells[(r["collective"], int(r["ranks"]), int(r["bytes"]))].append(
            (r["algorithm"], float(r["time_s"]), x))
    return cells


def nnls(a, b, iters=500):
    """min |a w - b| with w >= 0 (Lawson and Hanson's active set)."""
    n = a.shape[1]
    w, passive = np.zeros(n), np.zeros(n, bool)
    for _ in range(iters):
        grad = a.T @ (b - a @ w)
        if passive.all() or grad[~passive].max() <= 1e-12 * max(1.0, abs(grad).max()):
            break
        passive[np.argmax(np.where(passive, -np.inf, grad))] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                w = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(w[neg] / (w[neg] - z[neg]))
            w = w + alpha * (z - w)
            passive &= w > 1e-15
    return w


RIDGE = 1e-3  # a cell's weight of the pull of each factor toward 1 (the model's own constant)


def fit(cells):
    """Weights per (collective, algorithm) over the training cells.

    Fitted as factors of the platform's constants (the weight of a term over its constant in
    PLATFORM), pulled weakly toward 1: terms that move together (a ring's bytes across hosts and
    the bytes it reduces grow alike) would otherwise trade weight freely, and a site whose
    network is slower than the platform's would then see the ring's network bytes priced as
    reductions, at the platform's rate. The pull costs one held-out cell of 91."""
    const = np.array(PLATFORM["intra"] + PLATFORM["inter"])
    data = collections.defaultdict(lambda: ([], []))
    for (kind, ranks, nbytes), runs in cells.items():
        if held_out(kind, ranks, nbytes):
            continue
        for algo, t, x in runs:
            if math.isfinite(t):
                data[(kind, algo)][0].append(x * const / t)  # relative error: divide by t
                data[(kind, algo)][1].append(1.0)
    weights = {}
    for key, (xs, ys) in data.items():
        pull = math.sqrt(RIDGE * len(ys)) * np.eye(len(TERMS))
        a = np.vstack([np.array(xs), pull])
        b = np.concatenate([np.array(ys), pull.diagonal()])
        weights[key] = nnls(a, b) * const
    return weights


def evaluate(cells, weights, held):
    """(hits, cells, worst ratio) over the held-out (held=True) or training cells."""
    hits = total = 0
    worst = 1.0
    for (kind, ranks, nbytes), runs in cells.items():
        if held_out(kind, ranks, nbytes) != held:
            continue
        best = min(t for _, t, _ in runs if math.isfinite(t))
        pred = [(float(weights[(kind, a)] @ x) if (kind, a) in weights else math.inf, a, t)
                for a, t, x in runs]
        _, pick, t = min(pred)
        ratio = t / best if math.isfinite(t) else math.inf
        hits += ratio <= MARGIN
        total += 1
        worst = max(worst, ratio)
    return hits, total, worst


C_HEAD = """/* select_learned_table.c: the learned selector's weights, written by bench/scale/train.py
 * from bench/scale/results/sweep.csv (the simulated sweep of docs/SCALE.md: a flat cluster of
 * 8-rank hosts, 25 GB/s 2 us NICs, 8 to 4096 ranks, 1 KiB to 64 MiB). Do not edit: run
 * bench/scale/run.sh (or train.py) again. Held-out accuracy (a fifth of the cells, and every
 * cell of 128 and 4096 ranks):
%s
 */
#include "coll/select_learned.h"

static const coll_learned_row rows[] = {
"""


def write_c(path, weights, accuracy):
    names = {"ring": "RING", "rhd": "RHD", "tree": "TREE", "direct": "DIRECT", "rd": "RD",
             "bruck": "BRUCK", "hier-ring": "HIER", "hier-rhd": "HIER"}
    with open(path, "w") as f:
        f.write(C_HEAD % "\n".join(" * " + line for line in textwrap.wrap(accuracy, 96)))
        for (kind, algo), w in sorted(weights.items()):
            inner = "COLL_ALGO_RHD" if algo == "hier-rhd" else "COLL_ALGO_RING"
            ws = ", ".join("%.6g" % v for v in w)
            f.write("    {COLL_%s,\n     COLL_ALGO_%s,\n     %s,\n     {%s}},\n" % (
                kind.upper(), names[algo], inner, ws))
        f.write("};\n\nconst coll_learned_model coll_learned_cluster = {\n    .rph = 8,\n")
        for side in ("intra", "inter"):
            f.write("    .%s = {.alpha = %r, .beta = %r, .gamma = %r, .o = %r},\n" % (
                (side,) + PLATFORM[side]))
        f.write("    .rows = rows,\n    .nrows = sizeof rows / sizeof rows[0]};\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=os.path.join(here, "results", "sweep.csv"))
    ap.add_argument("--out", default=os.path.join(root, "src", "coll", "select_learned_table.c"))
    a = ap.parse_args()
    cells = load(a.csv)
    weights = fit(cells)
    h, n, worst = evaluate(cells, weights, True)
    th, tn, _ = evaluate(cells, weights, False)
    acc = "%d of %d cells (%.1f%%) within 5%% of the best, worst %.2fx; training cells %.1f%%" % (
        h, n, 100.0 * h / n, worst, 100.0 * th / tn)
    print("train: held out: " + acc)
    write_c(a.out, weights, acc)
    if shutil.which("clang-format"):  # the repository's style, where the tool is installed
        subprocess.run(["clang-format", "-i", a.out], check=True)


if __name__ == "__main__":
    main()
