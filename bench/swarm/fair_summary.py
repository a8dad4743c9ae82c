#!/usr/bin/python3
"""fair_summary.py OUT PNG: reads fair.sh's raw logs in OUT and writes OUT/summary.txt,
OUT/summary.md and the plot PNG. Every figure comes from the logs.

Time to 1e-3: an allreduce's is its timed call (the slowest rank; the result is exact, checked);
a Moshpit run's is from the moment its last peer started (vector filled, DHT joined) to the
report after which every peer is within 1e-3 (relative L2) of the 8-peer average, matching
included. With peers killed, the 8-peer average is out of reach (a victim's values that had not
spread died with it): what counts is whether every survivor gets within 1e-3 of the survivors'
weighted average, estimated from each peer's sketch (16 random projections, tern swarm --sketch;
sketches are linear, so the average's sketch is the weighted average of theirs)."""
import os
import re
import statistics
import sys

import swarmsum

TARGET = 1e-3
out, png = sys.argv[1], sys.argv[2]
params = open(os.path.join(out, "params")).read().split()
count, scale, reps = int(params[1]), params[3], int(params[5])
REPORT = re.compile(r"round (\d+) group (\d+) .*weight \S+ -> (\S+) .* at (\S+) relerr (\S+) sketch (\S+)")
START = re.compile(r"start at (\S+) relerr (\S+) .*sketch (\S+)")


def allreduce(tag):
    """(slowest rank's seconds, wrong) of a timed run, or the failures of an --until-error run."""
    times, wrong, fails = swarmsum.allreduce(out, tag)
    return (max(times) if len(times) == 8 and wrong == 0 else None), list(fails.values())


def peers_of(tag):
    """{peer: [(t, relerr, weight, sketch)]} and t0 (the last peer's start)."""
    peers, starts = {}, []
    for k in range(8):
        f = os.path.join(out, "%s-%d.out" % (tag, k))
        if not os.path.exists(f):
            continue
        pts, w = [], 1.0
        for ln in open(f):
            m = START.match(ln)
            if m:
                starts.append(float(m.group(1)))
                pts.append((float(m.group(1)), float(m.group(2)), w, [float(v) for v in m.group(3).split(",")]))
            m = REPORT.match(ln)
            if m:
                w = float(m.group(3))
                pts.append((float(m.group(4)), float(m.group(5)), w, [float(v) for v in m.group(6).split(",")]))
        peers[k] = pts
    return peers, (max(starts) if len(starts) == 8 else None)


def time_to_target(peers, t0):
    """Seconds from t0 until every peer's latest report is within TARGET, or None."""
    events = sorted((t, k, e) for k, pts in peers.items() for t, e, _, _ in pts)
    latest = {}
    for t, k, e in events:
        latest[k] = e
        if len(latest) == len(peers) and max(latest.values()) <= TARGET:
            return t - t0
    return None


def survivors_distance(peers, live, t0, after):
    """[(t - t0, d)]: d = the largest relative distance of a live peer to the live peers'
    weighted average, by sketches, after every report once all have reported; and the first
    time after `after` (the last kill) from which d stays within TARGET."""
    events = sorted((t, k, w, sk) for k in live for t, _, w, sk in peers[k])
    latest, series = {}, []
    for t, k, w, sk in events:
        latest[k] = (w, sk)
        if len(latest) < len(live):
            continue
        wsum = sum(w for w, _ in latest.values())
        mean = [sum(w * s[i] for w, s in latest.values()) / wsum for i in range(len(sk))]
        norm = sum(v * v for v in mean) ** 0.5
        d = max(sum((a - b) ** 2 for a, b in zip(s, mean)) ** 0.5 for _, s in latest.values()) / norm
        series.append((t - t0, d))
    return series, swarmsum.settled_from(series, TARGET, t0, after)


def victims(tag):
    """([peer killed], [when]) of run TAG."""
    k = swarmsum.kills(out, tag)
    return [p for p, _ in k], [t for _, t in k]


def spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "not reached"
    return "%.2f (%.2f-%.2f, %d of %d)" % (statistics.median(xs), min(xs), max(xs), len(xs), reps)


lines, md = [], []
NAMES = {"ring": "flat ring (TERN_ALGO=ring)", "hier": "region-first ring (hier, regions as hosts)",
         "mosh": "Moshpit 2x2x2, f32", "region": "region-aware Moshpit, f32",
         "regionef": "region-aware Moshpit, int8ef"}
times, curves = {}, {}
for tag in NAMES:
    times[tag] = []
    for r in range(1, reps + 1):
        if tag in ("ring", "hier"):
            t, _ = allreduce("%s-%d" % (tag, r))
        else:
            peers, t0 = peers_of("%s-%d" % (tag, r))
            t = time_to_target(peers, t0) if t0 else None
            if t0:
                curves.setdefault(tag, []).append((peers, t0))
        times[tag].append(t)
lines.append("fair WAN benchmark (issue 29): 8 peers, Virginia/Frankfurt/Tokyo/Oregon (2 each), AWS links x %s, %d floats (%.0f MiB), %d repetitions, interleaved" % (scale, count, count * 4 / 2**20, reps))
lines.append("started " + " ".join(params[7:]))
md.append("| scenario | time to 1e-3 of the 8-peer average, s: median (min-max, reps reaching it) | / flat ring (median of per-rep ratios) | / region-first ring |")
md.append("|---|---|---|---|")


def ratio(tag, base):
    rs = [a / b for a, b in zip(times[tag], times[base]) if a is not None and b]
    return "%.2f (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs)) if rs else "-"


for tag, name in NAMES.items():
    md.append("| %s | %s | %s | %s |" % (name, spread(times[tag]), ratio(tag, "ring"), ratio(tag, "hier")))
    lines.append("%s: per rep %s" % (name, ", ".join("%.2f" % t if t is not None else "-" for t in times[tag])))
md.append("")
md.append("| with peers killed | outcome per repetition |")
md.append("|---|---|")
kill_series = {}
for tag, name in (("ringkill", "flat ring, peer 5 killed 5 s in"), ("hierkill", "region-first ring, peer 5 killed 5 s in")):
    res = []
    for r in range(1, reps + 1):
        _, fails = allreduce("%s-%d" % (tag, r))
        _, kt = victims("%s-%d" % (tag, r))
        if not kt:
            continue
        kinds = sorted(set(f[2] for f in fails))
        res.append("%d of 7 survivors failed (%s) %.1f-%.1f s after the kill" % (
            len(fails), ", ".join(kinds) or "none", min(f[1] for f in fails) - kt[0], max(f[1] for f in fails) - kt[0]) if fails else "no failure seen")
    if res:
        md.append("| %s | %s |" % (name, "; ".join(res)))
for tag, name in (("moshkill", "Moshpit 2x2x2, peers 3, 4, 1, 6 killed in rounds 0-3"),
                  ("regionkill", "region-aware Moshpit, peers 3, 4, 1, 6 killed in rounds 0-3")):
    res = []
    for r in range(1, reps + 1):
        t = "%s-%d" % (tag, r)
        dead, kt = victims(t)
        peers, t0 = peers_of(t)
        if not t0 or not kt:
            continue
        live = [k for k in peers if k not in dead and peers[k]]
        series, ok = survivors_distance(peers, live, t0, max(kt))
        kill_series.setdefault(tag, []).append((series, [k - t0 for k in kt]))
        final8 = max(peers[k][-1][1] for k in live)
        res.append("survivors within %g of their average %s; %.2g apart at the end; %.3g from the 8-peer average" % (
            TARGET, "from %.1f s (last kill at %.1f s)" % (ok, max(kt) - t0) if ok is not None else "NOT reached",
            series[-1][1] if series else float("nan"), final8))
    if res:
        md.append("| %s | %s |" % (name, "; ".join(res)))
open(os.path.join(out, "summary.md"), "w").write("\n".join(md) + "\n")
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines + [""] + md) + "\n")
print("\n".join(lines + [""] + md))

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))
colors = {"mosh": "tab:blue", "region": "tab:green", "regionef": "tab:olive",
          "moshkill": "tab:blue", "regionkill": "tab:green"}
for tag, runs in curves.items():
    for i, (peers, t0) in enumerate(runs):
        events = sorted((t, k, e) for k, pts in peers.items() for t, e, _, _ in pts)
        latest, xs, ys = {}, [], []
        for t, k, e in events:
            latest[k] = e
            if len(latest) == len(peers):
                xs.append(max(t - t0, 0))
                ys.append(max(max(latest.values()), 1e-7))
        ax.plot(xs, ys, "-", color=colors[tag], lw=1, alpha=0.8, drawstyle="steps-post",
                label=NAMES[tag] if i == 0 else None)
for tag, style in (("ring", "k--"), ("hier", "k:")):
    ok = [t for t in times[tag] if t is not None]
    if ok:
        m = statistics.median(ok)
        ax.plot([0, m, m], [1, 1, 1e-7], style, lw=1.5, label="%s (exact at %.1f s, median)" % (NAMES[tag], m))
swarmsum.error_axes(ax, TARGET, "seconds since every peer started (allreduce: its timed call)",
                    "worst peer's relative L2 error to the 8-peer average",
                    "no failures, %d repetitions" % reps)
ax.legend(fontsize=8, loc="lower left")
for tag, runs in kill_series.items():
    for i, (series, kills) in enumerate(runs):
        bx.plot([max(t, 0) for t, _ in series], [max(d, 1e-7) for _, d in series], "-", color=colors[tag],
                lw=1, drawstyle="steps-post", label=("Moshpit 2x2x2" if tag == "moshkill" else "region-aware Moshpit") if i == 0 else None)
swarmsum.error_axes(bx, TARGET, "seconds since every peer started (4 peers killed in rounds 0-3)",
                    "largest distance of a survivor to the survivors' average",
                    "peers killed (flat and region-first rings: every survivor fails)")
if kill_series:
    bx.legend(fontsize=8, loc="upper right")
fig.suptitle("8 peers, 4 regions, %d floats, AWS links x %s (tests/wan/wan.sh)" % (count, scale))
fig.tight_layout()
fig.savefig(png, dpi=110)
