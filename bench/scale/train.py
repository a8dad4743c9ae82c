#!/usr/bin/python3
"""train.py: the learned selector, fitted on simulated sweeps of a family of platforms.

Each row of a sweep carries the cost model's terms of rank 0's schedule, priced per phase on the
host (shm_*) or across hosts (net_*): phases' latencies, bytes of the busier direction, bytes
reduced, messages beyond a phase's first (coll_sched_cost_hosts with unit constants). On a
platform of constants c (intra, inter), a cell's twelve features are the host's terms times the
intra constants, the terms across hosts times the inter ones, and the terms across hosts again
times the slower of the two constants: a phase that crosses hosts while other ranks of the host
move bytes over shared memory (a flat ring) goes at the pace of the slower link, which a sum of
the first eight cannot say once the NIC is slower than shared memory. For each (collective,
algorithm) the selector predicts time as a non-negative weighting of the twelve (factors of the
cost model's prices); the factors minimise the squared *relative* error over the training cells
of every training platform (a cell: one platform, collective, rank count and size), each pulled
weakly toward 1 (fit()). The selector picks the least predicted time.

Training platforms (TRAIN): the sweep of docs/SCALE.md (sweep.csv: 25 GB/s 2 us NICs, 8 to 4096
ranks) and four others of 16 to 128 ranks (family.sh: NICs of 12 GB/s 4 us, 6 GB/s 2 us, 1.5 GB/s
20 us, 25 GB/s 20 us). Held-out platforms (HELD), never fitted on, only scored: 3 GB/s 10 us
(unseen.sh's sweep_slow_nic.csv, 16 to 256 ranks), 100 GB/s 1 us and 10 GB/s 50 us (16 to 128
ranks). Within a training platform, cells are split once, by a rule the C test
(tests/unit/test_select_learned.c) repeats: a cell is held out when (collective + log2 ranks +
log4 (bytes / 1 KiB)) % 5 == 0, a fifth of the cells, spread over every rank count and size, and
so is every cell of 128 and of 4096 ranks (16 and 512 hosts): a host count inside the trained
range and one beyond it, none of whose cells the fit sees. A scored cell counts as a hit when the
pick's simulated time is within 5% of the cell's best; an algorithm the sweep only bounded
(sweep.py) is at least 5% behind the best, so picking it is a miss. The pull toward 1 (RIDGE)
was chosen by leaving each of the four smaller training platforms out in turn (--cv), never by
the held-out platforms.

Writes src/coll/select_learned_table.c (the weights: each factor times the price it multiplies
on sweep.csv's platform, which select_learned.c rescales to a site's constants) and prints the
accuracy on held-out cells and platforms.
usage: train.py [--results bench/scale/results] [--out src/coll/select_learned_table.c] [--cv]
"""
import argparse
import collections
import csv
import math
import os
import shutil
import subprocess

import numpy as np

TERMS = ["shm_alpha", "shm_beta", "shm_gamma", "shm_o", "net_alpha", "net_beta", "net_gamma",
         "net_o"]
KINDS = {"allreduce": 0, "reduce_scatter": 1, "allgather": 2}
MARGIN = 1.05
HELD_RANKS = (128, 4096)  # whole rank counts (and host counts) absent from training


def platform(nic_gbps, nic_us):
    """The constants of tern sim coll's cluster with NICs of nic_gbps and nic_us, in the order of
    TERMS: alpha (latency + 2 us of CPU, one at each end), beta, gamma, o, on the host and across
    hosts. The C selector scales each weight by a site's price over sweep.csv's (select_learned.h).
    """
    return np.array([0.34e-6 + 2e-6, 1 / 12.45e9, 1 / 8.10e9, 1e-6,
                     nic_us * 1e-6 + 2e-6, 1 / (nic_gbps * 1e9), 1 / 8.10e9, 1e-6])


# (results file, NIC GB/s, NIC us): the first is the platform whose constants the C table keeps
TRAIN = [("sweep.csv", 25, 2), ("family_12g_4us.csv", 12, 4), ("family_6g_2us.csv", 6, 2),
         ("family_1.5g_20us.csv", 1.5, 20), ("family_25g_20us.csv", 25, 20)]
HELD = [("sweep_slow_nic.csv", 3, 10), ("unseen_100g_1us.csv", 100, 1),
        ("unseen_10g_50us.csv", 10, 50)]


def features(x, c):
    """A cell's twelve features on a platform of constants c (the module's docstring)."""
    return np.concatenate([x[:4] * c[:4], x[4:] * c[4:], x[4:] * np.maximum(c[:4], c[4:])])


def prices(c):
    """What each of the twelve features multiplies a term by on a platform of constants c."""
    return features(np.ones(len(TERMS)), c)


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


RIDGE = 1e-5  # a cell's weight of the pull of each factor toward its prior (fit())


def fit(sets, ridge=RIDGE, n=len(TERMS) + len(TERMS) // 2):
    """Factors per (collective, algorithm) over the training cells of sets ((cells, c) pairs).

    Each factor is pulled weakly toward its prior: 1 for the cost model's own eight (terms that
    grow together, such as a ring's bytes across hosts and the bytes it reduces, would otherwise
    trade weight freely), 0 for the four at the slower link's price, a correction the data must
    ask for. n: the first n features only (--cv compares the eight alone)."""
    prior = np.array([1.0] * len(TERMS) + [0.0] * (len(TERMS) // 2))[:n]
    data = collections.defaultdict(lambda: ([], []))
    for cells, c in sets:
        for (kind, ranks, nbytes), runs in cells.items():
            if held_out(kind, ranks, nbytes):
                continue
            for algo, t, x in runs:
                if math.isfinite(t):
                    data[(kind, algo)][0].append(features(x, c)[:n] / t)  # relative error
                    data[(kind, algo)][1].append(1.0)
    factors = {}
    for key, (xs, ys) in data.items():
        pull = math.sqrt(ridge * len(ys)) * np.eye(len(prior))
        a = np.vstack([np.array(xs), pull])
        b = np.concatenate([np.array(ys), pull @ prior])
        factors[key] = nnls(a, b)
    return factors


def predict(factors, x, c):
    """A row's predicted time (inf without a row): its factors on the first features."""
    return math.inf if factors is None else float(factors @ features(x, c)[:len(factors)])


def evaluate(cells, factors, c, held=None):
    """(hits, cells, worst ratio) over a platform's held-out (held=True), training (False) or
    all (None) cells, c its constants."""
    hits = total = 0
    worst = 1.0
    for (kind, ranks, nbytes), runs in cells.items():
        if held is not None and held_out(kind, ranks, nbytes) != held:
            continue
        best = min(t for _, t, _ in runs if math.isfinite(t))
        pred = [(predict(factors.get((kind, a)), x, c), a, t) for a, t, x in runs]
        _, pick, t = min(pred)
        ratio = t / best if math.isfinite(t) else math.inf
        hits += ratio <= MARGIN
        total += 1
        worst = max(worst, ratio)
    return hits, total, worst


def leave_one_out(sets, ridge, n):
    """Hits and cells of each smaller training platform (all its cells), fitted on the others."""
    hits = total = 0
    for i in range(1, len(sets)):
        h, cells, _ = evaluate(sets[i][0], fit(sets[:i] + sets[i + 1:], ridge, n), sets[i][1])
        hits, total = hits + h, total + cells
    return hits, total


C_HEAD = """/* select_learned_table.c: the learned selector's weights, written by bench/scale/train.py
 * from the simulated sweeps of its training platforms (docs/SCALE.md, "The learned selector": a
 * flat cluster of 8-rank hosts, 1 KiB to 64 MiB; 25 GB/s 2 us NICs on 8 to 4096 ranks, four other
 * NICs on 16 to 128). Do not edit: run bench/scale/run.sh (or train.py) again. Accuracy, within 5%%
 * of the best (held out: a fifth of each training platform's cells and every cell of 128 and 4096
 * ranks; held-out platforms: every cell):
%s
 */
#include "coll/select_learned.h"

static const coll_learned_row rows[] = {
"""


def write_c(path, weights, accuracy):
    names = {"ring": "RING", "rhd": "RHD", "tree": "TREE", "direct": "DIRECT", "rd": "RD",
             "bruck": "BRUCK", "hier-ring": "HIER", "hier-rhd": "HIER"}
    base = platform(*TRAIN[0][1:])
    with open(path, "w") as f:
        f.write(C_HEAD % "\n".join(" * " + line for line in accuracy))
        for (kind, algo), w in sorted(weights.items()):
            inner = "COLL_ALGO_RHD" if algo == "hier-rhd" else "COLL_ALGO_RING"
            ws = ", ".join("%.6g" % v for v in w)
            f.write("    {COLL_%s,\n     COLL_ALGO_%s,\n     %s,\n     {%s}},\n" % (
                kind.upper(), names[algo], inner, ws))
        f.write("};\n\nconst coll_learned_model coll_learned_cluster = {\n    .rph = 8,\n")
        for side, c in (("intra", base[:4]), ("inter", base[4:])):
            f.write("    .%s = {.alpha = %r, .beta = %r, .gamma = %r, .o = %r},\n" % (
                (side,) + tuple(float(v) for v in c)))
        f.write("    .rows = rows,\n    .nrows = sizeof rows / sizeof rows[0]};\n")


def describe(name, hits, total, worst):
    return "%s: %d of %d (%.1f%%), worst %.2fx" % (name, hits, total, 100.0 * hits / total, worst)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(here, "results"))
    ap.add_argument("--out", default=os.path.join(root, "src", "coll", "select_learned_table.c"))
    ap.add_argument("--cv", action="store_true",
                    help="print the leave-one-platform-out score of several pulls, and stop")
    a = ap.parse_args()
    sets = [(load(os.path.join(a.results, f)), platform(bw, us)) for f, bw, us in TRAIN]
    if a.cv:
        for n in (len(TERMS), len(prices(sets[0][1]))):
            for ridge in (1e-3, 1e-4, 1e-5, 1e-6):
                print("train: %d prices, pull %g: left-out platforms %d of %d" % (
                    (n, ridge) + leave_one_out(sets, ridge, n)))
        return
    factors = fit(sets)
    acc = []
    for (f, bw, us), (cells, c) in zip(TRAIN, sets):
        name = "trained %gGB/s %gus" % (bw, us)
        acc.append(describe(name + " held-out cells", *evaluate(cells, factors, c, True)))
        if f == TRAIN[0][0]:
            acc.append(describe(name + " training cells", *evaluate(cells, factors, c, False)))
    for f, bw, us in HELD:
        path = os.path.join(a.results, f)
        if os.path.exists(path):
            acc.append(describe("held-out platform %gGB/s %gus" % (bw, us),
                                *evaluate(load(path), factors, platform(bw, us))))
    for line in acc:
        print("train: " + line)
    base = prices(platform(*TRAIN[0][1:]))
    write_c(a.out, {k: v * base for k, v in factors.items()}, acc)
    if shutil.which("clang-format"):  # the repository's style, where the tool is installed
        subprocess.run(["clang-format", "-i", a.out], check=True)


if __name__ == "__main__":
    main()
