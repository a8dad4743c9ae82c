#!/usr/bin/python3
"""sweep.py: tern's schedules on simulated clusters of 8 to 4096 ranks (`tern sim coll`).

For every rank count (8 ranks per host, the default flat cluster of docs/SCALE.md), every
collective of PCCL's study (allreduce, reduce_scatter, allgather) and every size from 1 KiB to
64 MiB (x4), it simulates every algorithm that has the collective, hier by ring and by rhd across
hosts included, and writes one CSV row per (collective, ranks, size, algorithm).

Two algorithms send O(n^2) messages: the ring (2n(n-1) for allreduce) and direct (n(n-1) in one
phase). SimGrid moves about 2e5 messages a second here, so a ring of 4096 ranks takes minutes per
cell. Above --ring-max (--direct-max) ranks they are first only *bounded*: `--bound-only` builds
every rank's plan and bounds the time from below: by the most local work of any rank and by the
most bytes any host's NIC must carry one way over its bandwidth, neither of which a simulation
can beat. A
cell is simulated only where that bound does not already put the algorithm more than 5% behind
the best simulated one (where it could still be within 5% of the best, which is what the
selector is held to); elsewhere the row keeps the bound and an empty time. The PCCL cells (2048
ranks, 1 and 64 MiB) simulate the ring whatever its bound, to measure how far behind it is.

Each rank count's rows are kept in --cache (bench/out/scale-sweep/) as they finish, and a run
takes them from there instead of simulating again (--fresh: simulate everything).

usage: sweep.py [--tern build/tern] [--out bench/scale/results/sweep.csv] [--max-ranks 4096]
                [--jobs 2] [--ring-max 512] [--direct-max 128] [--cache DIR] [--fresh]
"""
import argparse
import concurrent.futures
import csv
import io
import math
import os
import subprocess
import sys
import time

COLLS = "allreduce,reduce_scatter,allgather"
CHEAP = "rhd,tree,rd,bruck,hier"
RPH = 8
PCCL_RANKS, PCCL_SIZES = 2048, (1 << 20, 64 << 20)  # the ends of PCCL's 1 to 64 MB
MARGIN = 1.05


def tern_csv(tern, args):
    """Runs `tern sim coll ... --csv`; returns its rows as dicts."""
    cmd = [tern, "sim", "coll"] + args + ["--csv", "--timeout", "7200"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def base(n, colls, algos, lo="1K", hi="64M"):
    return [colls, "-n", str(n), "--rph", str(RPH), "-b", str(lo), "-e", str(hi), "-f", "4",
            "-a", algos]


def sweep_ranks(tern, n, ring_max, direct_max):
    """All rows for n ranks."""
    cheap = CHEAP + (",ring" if n <= ring_max else "") + (",direct" if n <= direct_max else "")
    rows = tern_csv(tern, base(n, COLLS, cheap))
    dear = [a for a, lim in (("ring", ring_max), ("direct", direct_max)) if n > lim]
    if not dear:
        return rows
    best = {}
    for r in rows:
        t = float(r["time_s"])
        key = (r["collective"], r["bytes"])
        if not math.isnan(t):
            best[key] = min(best.get(key, math.inf), t)
    bounded = tern_csv(tern, base(n, COLLS, ",".join(dear)) + ["--bound-only"])
    for r in bounded:
        key = (r["collective"], r["bytes"])
        pccl = r["algorithm"] == "ring" and n == PCCL_RANKS and int(r["bytes"]) in PCCL_SIZES
        if float(r["bound_s"]) <= MARGIN * best[key] or pccl:
            got = tern_csv(tern, base(n, r["collective"], r["algorithm"], r["bytes"], r["bytes"]))
            r = got[0]
        rows.append(r)
    return rows


def cached(tern, n, a):
    """sweep_ranks, through the cache."""
    path = os.path.join(a.cache, "sweep-%d.csv" % n)
    if not a.fresh and os.path.exists(path):
        return list(csv.DictReader(open(path)))
    rows = sweep_ranks(tern, n, a.ring_max, a.direct_max)
    os.makedirs(a.cache, exist_ok=True)
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap.add_argument("--tern", default=os.path.join(root, "build", "tern"))
    ap.add_argument("--out", default=os.path.join(here, "results", "sweep.csv"))
    ap.add_argument("--max-ranks", type=int, default=4096)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ring-max", type=int, default=512)
    ap.add_argument("--direct-max", type=int, default=128)
    ap.add_argument("--cache", default=os.path.join(root, "bench", "out", "scale-sweep"))
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args()
    ranks = [8 << i for i in range(20) if 8 << i <= a.max_ranks]
    t0 = time.time()
    rows = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futs = {pool.submit(cached, a.tern, n, a): n for n in ranks}
        for f in concurrent.futures.as_completed(futs):
            rows += f.result()
            print(f"sweep: {futs[f]} ranks done at {time.time() - t0:.0f} s", file=sys.stderr)
    order = {c: i for i, c in enumerate(COLLS.split(","))}
    rows.sort(key=lambda r: (order[r["collective"]], int(r["ranks"]), int(r["bytes"]),
                             r["algorithm"]))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(f"sweep: {len(rows)} rows in {a.out}, {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
