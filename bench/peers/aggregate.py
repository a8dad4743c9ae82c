#!/usr/bin/python3
"""aggregate.py: bench/peers' raw measurements -> the tables of docs/PERFORMANCE.md.

Reads RESULTS/raw.csv (one line per round, tool, transport, n, collective and size, as run.sh
records them), RESULTS/hoststate.csv (the vCPUs' placement around each launch), membw.csv,
tcpfloor.csv and env.txt; writes RESULTS/medians.csv (the median over rounds of each cell, its
tools compared within one placement) and RESULTS/tables.md (every table), and with --page fills the
template's @NAME@ markers to write the page. Nothing in the page's figures is typed by hand:
every number comes from these files.

The ratio of a cell is tern's median time over the best peer's on the same transport (shm:
ompi, mpich; tcp: ompi, mpich, gloo); the target is <= 0.9.
"""
import argparse
import csv
import math
import statistics
from collections import defaultdict

COLLS = ["allreduce", "reduce_scatter", "allgather", "broadcast"]
PEERS = {"shm": ["ompi", "mpich"], "tcp": ["ompi", "mpich", "gloo"]}
TARGET = 0.9
BOUND_TARGET = 0.8


def size_str(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k and b % k == 0:
            return f"{b // k} {unit}"
    return f"{b} B"


def time_str(us):
    if us is None or math.isnan(us):
        return "n/a"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.3g} us" if us < 10 else f"{us:.0f} us"


def load(results):
    runs = defaultdict(list)  # (tool, tr, n, coll, bytes) -> [(round, time_us)]
    wrong = defaultdict(int)
    with open(f"{results}/raw.csv") as f:
        for r in csv.DictReader(f):
            key = (r["tool"], r["transport"], int(r["n"]), r["coll"], int(r["bytes"]))
            t = float(r["time_us"])
            if not math.isnan(t):
                runs[key].append((int(r["round"]), t))
            if int(r["wrong"]) > 0:
                wrong[key] += int(r["wrong"])
    med, placement = placement_medians(runs, host_states(results))
    return med, placement, wrong


def host_states(results):
    """(round, tool, tr, n, coll) -> "near", "far" or "mixed": where the two vCPUs were placed
    while that launch ran (c2c.c's probe before and after it). A round trip under twice the
    run's shortest is near; a launch whose two probes disagree is mixed. Empty without probes."""
    try:
        with open(f"{results}/hoststate.csv") as f:
            probes = list(csv.DictReader(f))
    except FileNotFoundError:
        return {}
    if not probes:
        return {}
    near = 2 * min(min(float(p["c2c_before_ns"]), float(p["c2c_after_ns"])) for p in probes)
    states = {}
    for p in probes:
        sides = {float(p[k]) < near for k in ("c2c_before_ns", "c2c_after_ns")}
        state = "mixed" if len(sides) == 2 else "near" if sides.pop() else "far"
        for coll in p["colls"].split("+"):
            states[(int(p["round"]), p["tool"], p["transport"], int(p["n"]), coll)] = state
    return states


def placement_medians(runs, states):
    """The median over rounds of each tool's time, the tools of a cell compared within one
    placement of the vCPUs: the placement (near, else far) in which every tool of the cell ran
    at least once, using only those rounds; "all" rounds when every run was in it, "differ" (all
    rounds, flagged) when no placement holds every tool. Returns the medians and, per (tr, n,
    coll, bytes), the placement used."""
    med, placement = {}, {}
    cellkeys = defaultdict(list)
    for key in runs:
        cellkeys[key[1:]].append(key)
    for cell, keys in cellkeys.items():
        def state(key, rnd):
            return states.get((rnd, key[0]) + key[1:4], "unprobed")
        chosen = "differ" if states else "unprobed"
        for s in ("near", "far") if states else ():
            if all(any(state(k, rnd) == s for rnd, _ in runs[k]) for k in keys):
                chosen = s
                break
        if chosen in ("near", "far") and all(state(k, rnd) == chosen for k in keys for rnd, _ in runs[k]):
            chosen = "all"
        for k in keys:
            ts = [t for rnd, t in runs[k]
                  if chosen in ("all", "differ", "unprobed") or state(k, rnd) == chosen]
            med[k] = statistics.median(ts)
        placement[cell] = chosen
    return med, placement


def busbw(coll, n, b, us):
    f = {"allreduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(coll, (n - 1) / n)
    return b / (us * 1e-6) / 1e9 * f


def best_peer(med, tr, n, coll, b):
    got = [(med[(p, tr, n, coll, b)], p) for p in PEERS[tr] if (p, tr, n, coll, b) in med]
    return min(got) if got else (None, None)


def configs(med):
    """(tr, n, coll) -> sorted sizes where tern has a figure."""
    out = defaultdict(set)
    for tool, tr, n, coll, b in med:
        if tool == "tern":
            out[(tr, n, coll)].add(b)
    return {k: sorted(v) for k, v in out.items()}


def ratio_rows(med, cfg):
    """(tr, n, coll, bytes, tern, best, peer, ratio) for every cell with both."""
    rows = []
    for (tr, n, coll), sizes in sorted(cfg.items()):
        for b in sizes:
            bt, bp = best_peer(med, tr, n, coll, b)
            t = med[("tern", tr, n, coll, b)]
            rows.append((tr, n, coll, b, t, bt, bp, t / bt if bt else None))
    return rows


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def summary(rows, ns):
    """Per (transport, n, collective): cells within the target, the worst ratio and where."""
    out = []
    for tr in ("shm", "tcp"):
        for n in ns:
            for coll in COLLS:
                rs = [r for r in rows if r[0] == tr and r[1] == n and r[2] == coll and r[7]]
                if not rs:
                    continue
                met = sum(r[7] <= TARGET for r in rs)
                worst = max(rs, key=lambda r: r[7])
                best = min(rs, key=lambda r: r[7])
                out.append([tr, n, coll, f"{met} of {len(rs)}",
                            f"{worst[7]:.2f} at {size_str(worst[3])} (vs {worst[6]})",
                            f"{best[7]:.2f} at {size_str(best[3])}",
                            f"{statistics.median(r[7] for r in rs):.2f}"])
    return md_table(["transport", "n", "collective", "cells <= 0.9", "worst tern/best peer",
                     "best", "median ratio"], out)


def detail(med, cfg, wrong, placement):
    """One table per (collective, transport, n): every tool's time, the ratio, and the placement
    of the vCPUs the ratio compares in when that is not every round's (placement_medians)."""
    parts = []
    for coll in COLLS:
        for tr in ("shm", "tcp"):
            for n in sorted({k[1] for k in cfg}):
                sizes = cfg.get((tr, n, coll))
                if not sizes or n > 4:
                    continue
                tools = ["tern"] + PEERS[tr]
                head = ["size"] + [f"{t}-{tr}" if t != "gloo" else t for t in tools] + [
                    "tern/best peer", "tern busbw GB/s"]
                rows = []
                for b in sizes:
                    bt, bp = best_peer(med, tr, n, coll, b)
                    t = med[("tern", tr, n, coll, b)]
                    cells = [time_str(med.get((x, tr, n, coll, b))) +
                             (" WRONG" if wrong.get((x, tr, n, coll, b)) else "") for x in tools]
                    r = t / bt if bt else None
                    mark = "" if r is None else (" ok" if r <= TARGET else " **miss**")
                    where = placement.get((tr, n, coll, b), "all")
                    mark += "" if where in ("all", "unprobed") else f" ({where})"
                    rows.append([size_str(b)] + cells +
                                [f"{r:.2f}{mark}" if r else "n/a", f"{busbw(coll, n, b, t):.2f}"])
                parts.append(f"#### {coll}, {tr}, n = {n}\n\n" + md_table(head, rows))
    return "\n\n".join(parts)


def membw(results, threads=2):
    """(op, bytes per thread) -> the median over rounds of the rate of `threads` threads."""
    rates = defaultdict(list)  # (op, bytes) -> [gbs per round]
    with open(f"{results}/membw.csv") as f:
        for r in csv.DictReader(f):
            if int(r["threads"]) == threads:
                rates[(r["op"], int(r["bytes_per_thread"]))].append(float(r["gbs_median"]))
    return {k: statistics.median(v) for k, v in rates.items()}


def bound(med, results):
    """busbw of tern's f32 sum allreduce, n = 2, shm, at 16 and 64 MiB against the bound.

    Each rank reduces half the message and copies the other half: with R and C the 2-thread
    sum-reduce and memcpy rates (output bytes, both threads together), one call takes at least
    S/R + S/C, so busbw (= S/t at n = 2) is at most R*C/(R+C). The rates are taken at a
    per-thread buffer of S (a working set like the call's: send and receive buffers on each
    rank) and at 512 MiB per thread (DRAM)."""
    rates = membw(results)
    if not rates:  # run.sh --small measures no large message and no memory rate
        return "(no memory rates measured in this run)"
    dram = max(b for _, b in rates)
    rows, verdicts = [], []
    for s in (16 << 20, 64 << 20):
        t = med.get(("tern", "shm", 2, "allreduce", s))
        if t is None:
            continue
        got = busbw("allreduce", 2, s, t)
        peer_t, peer = best_peer(med, "shm", 2, "allreduce", s)
        for label, ws in (("same working set", s), ("DRAM (512 MiB per thread)", dram)):
            if ("memcpy", ws) not in rates:
                continue
            c, r = rates[("memcpy", ws)], rates[("sum-reduce", ws)]
            b = r * c / (r + c)
            rows.append([size_str(s), label, f"{c:.1f}", f"{r:.1f}", f"{b:.2f}", f"{got:.2f}",
                         f"{100 * got / b:.0f}%" + (" ok" if got >= BOUND_TARGET * b else " **miss**"),
                         f"{busbw('allreduce', 2, s, peer_t):.2f} ({peer})" if peer_t else "n/a"])
    return md_table(["message", "rates at", "memcpy GB/s", "sum-reduce GB/s", "bound busbw GB/s",
                     "tern busbw GB/s", "tern % of bound", "best peer busbw"], rows)


def floor(med, results):
    """The copy floor of shm broadcast and allgather at n = 2, 16 and 64 MiB, against each tool.

    Broadcast (in place): the receiver must land S bytes, one thread copying while the root
    waits. Allgather (out of place): each rank copies its own S/2 into place and the peer's
    S/2, both ranks at once. Each is priced at two rates measured in the same run at the
    per-thread size that thread copies: memcpy (a copy within one process, the floor for any
    design) and process_vm_readv (the kernel's single copy between processes, which Open MPI's
    and tern's large messages use). floor / time near 1 means the tool copies at that rate;
    floor / best peer is the lowest ratio to the best peer that a design copying at that rate
    could reach."""
    one, two = membw(results, 1), membw(results, 2)
    if not one or not two:
        return "(no single-thread memory rates measured in this run)"

    def secs(nbytes, rates, op, per_thread):
        r = rates.get((op, per_thread))
        return nbytes / (r * 1e9) if r else None

    rows = []
    for coll in ("broadcast", "allgather"):
        for s in (16 << 20, 64 << 20):
            t = med.get(("tern", "shm", 2, coll, s))
            peer_t, peer = best_peer(med, "shm", 2, coll, s)
            if t is None or peer_t is None:
                continue
            for label, op in (("memcpy", "memcpy"), ("single copy", "cma-read")):
                if coll == "broadcast":
                    f = secs(s, one, op, s)
                else:  # both threads at once: own half by memcpy, the peer's half by op
                    own, other = secs(s, two, "memcpy", s // 2), secs(s, two, op, s // 2)
                    f = own + other if own and other else None
                if f is None:
                    continue
                us = f * 1e6
                rows.append([coll, size_str(s), label, time_str(us), time_str(t), f"{us / t:.2f}",
                             f"{time_str(peer_t)} ({peer})", f"{us / peer_t:.2f}"])
    return md_table(["collective", "size", "copies at the rate of", "floor", "tern", "floor / tern",
                     "best peer", "floor / best peer"], rows)


def placement_summary(placement):
    """How many cells of the main sweep compared their tools within which placement."""
    main = [v for (tr, n, coll, b), v in placement.items() if n <= 4]
    if all(v == "unprobed" for v in main):
        return "not probed (an older run): every cell takes all rounds"
    counts = {k: sum(v == k for v in main) for k in ("all", "near", "far", "differ")}
    return (f"{counts['all']} cells ran every round in one placement; {counts['near']} were compared "
            f"in their near rounds only and {counts['far']} in their far rounds only; "
            f"{counts['differ']} had no placement that every tool ran in (all rounds, marked "
            f"\"differ\" in the tables)")


def tcp_floor(med, results):
    """TCP broadcast at n = 2 against the cost of one loopback message (tcpfloor.c, median over
    rounds): the time per message of back-to-back sends, one send() each, of that payload. A
    reference, not a bound (PERFORMANCE.md.in says why)."""
    floors = defaultdict(list)
    try:
        with open(f"{results}/tcpfloor.csv") as f:
            for r in csv.DictReader(f):
                floors[int(r["bytes"])].append(float(r["us_per_message"]))
    except FileNotFoundError:
        return "(not measured in this run)"
    rows = []
    for b, us in sorted(floors.items()):
        fl = statistics.median(us)
        row = [size_str(b), time_str(fl)]
        for tool in ["tern"] + PEERS["tcp"]:
            t = med.get((tool, "tcp", 2, "broadcast", b))
            row.append(f"{time_str(t)} ({t / fl:.2f})" if t else "n/a")
        rows.append(row)
    return md_table(["size", "one loopback message"] +
                    [f"{t}: time (/ message)" for t in ["tern"] + PEERS["tcp"]], rows)


def oversub(med):
    ns = sorted({k[2] for k in med if k[2] >= 4})
    swept = sorted({k[3] for k in med if k[2] > 4}, key=COLLS.index) or COLLS
    rows = []
    for tr in ("shm", "tcp"):
        for coll in swept:
            for b in (8, 64 << 10, 16 << 20):
                row = [tr, coll, size_str(b)]
                for n in ns:
                    t = med.get(("tern", tr, n, coll, b))
                    bt, bp = best_peer(med, tr, n, coll, b)
                    if t is None:
                        row.append("n/a")
                        continue
                    row.append(f"{time_str(t)} / {time_str(bt)} {bp} = **{t / bt:.2f}**" if bt
                               else f"{time_str(t)} / no peer")
                rows.append(row)
    ratio = md_table(["transport", "collective", "size"] +
                     [f"n = {n}: tern / best peer" for n in ns], rows)
    every = []  # every tool's time, to show who collapses
    for tr in ("shm", "tcp"):
        for coll in swept:
            for b in (8, 64 << 10, 16 << 20):
                for tool in ["tern"] + PEERS[tr]:
                    cells = [time_str(med.get((tool, tr, n, coll, b))) for n in ns]
                    if any(c != "n/a" for c in cells):
                        every.append([tr, coll, size_str(b), tool] + cells)
    return ratio + "\n\nEvery tool's time per call:\n\n" + md_table(
        ["transport", "collective", "size", "tool"] + [f"n = {n}" for n in ns], every)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", required=True)
    p.add_argument("--page", help="the page's template, with @NAME@ markers")
    p.add_argument("--out", help="the page written from the template")
    p.add_argument("--tuning", help="tern tune's output, shown on the page")
    a = p.parse_args()
    med, placement, wrong = load(a.results)
    with open(f"{a.results}/medians.csv", "w") as f:
        f.write("tool,transport,n,coll,bytes,time_us\n")
        for k in sorted(med):
            f.write(",".join(str(x) for x in k) + f",{med[k]:.4f}\n")
    cfg = configs(med)
    rows = ratio_rows(med, cfg)
    main_ns = sorted({n for _, n, _ in cfg if n <= 4})
    parts = {
        "ENV": "```\n" + open(f"{a.results}/env.txt").read().strip() + "\n```",
        "SUMMARY": summary(rows, main_ns),
        "BOUND": bound(med, a.results),
        "FLOOR": floor(med, a.results),
        "TCPFLOOR": tcp_floor(med, a.results),
        "OVERSUB": oversub(med),
        "TABLES": detail(med, cfg, wrong, placement),
        "PLACEMENT": placement_summary(placement),
        "WRONG": ", ".join(f"{k}: {v}" for k, v in wrong.items()) or "none",
    }
    all_met = sum(r[7] <= TARGET for r in rows if r[7] and r[1] <= 4)
    all_n = sum(1 for r in rows if r[7] and r[1] <= 4)
    parts["COUNT"] = f"{all_met} of {all_n}"
    with open(f"{a.results}/tables.md", "w") as f:
        for k, v in parts.items():
            f.write(f"## {k}\n\n{v}\n\n")
    print(parts["SUMMARY"])
    print()
    print(parts["BOUND"])
    print(f"\ncells within 0.9 x the best peer (n <= 4): {parts['COUNT']}; wrong results: {parts['WRONG']}")
    if a.page and a.out:
        page = open(a.page).read()
        tune = open(a.tuning).read().strip() if a.tuning else ""
        parts["TUNE"] = "```\n" + tune + "\n```" if tune else "(not run)"
        for k, v in parts.items():
            page = page.replace(f"@{k}@", v)
        with open(a.out, "w") as f:
            f.write(page)


if __name__ == "__main__":
    main()
