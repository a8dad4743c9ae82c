#!/usr/bin/python3
"""summarize.py OUT PNG: reads run.sh's raw logs in OUT, writes OUT/summary.txt, OUT/summary.md and
the plot PNG (relative L2 error to the global average against time). Every figure comes from the
logs; a scenario that did not reach 1e-3 says so."""
import glob
import os
import re
import sys

import swarmsum

TARGET = 1e-3
out, png = sys.argv[1], sys.argv[2]
params = open(os.path.join(out, "params")).read().split()
count = int(params[1])
scale = params[3]
lines = []


def say(s=""):
    lines.append(s)


def ring_time(tag):
    times, wrong, _ = swarmsum.allreduce(out, tag)
    errs = []
    for f in sorted(glob.glob(os.path.join(out, tag + "-*.err"))):
        errs += [ln.strip() for ln in open(f) if ln.strip()]
    return times, wrong, errs


def swarm(tag, skip=()):
    """Each peer's error against time; for churn, peer k is its last incarnation and t0 comes
    from the first ones (the killed logs and the peers never restarted)."""
    peers = {}
    sketch_of, ref_sketch = {}, [None]
    first_starts = []
    for f in glob.glob(os.path.join(out, "%s-*-killed*.out" % tag)):
        m = re.search(r"start at (\S+)", open(f).read())
        if m:
            first_starts.append(float(m.group(1)))
    for k in range(8):
        f = os.path.join(out, "%s-%d.out" % (tag, k))
        if not os.path.exists(f):
            continue
        start, pts, rounds, sketches = None, [], [], []
        for ln in open(f):
            m = re.match(r"(?:start at|round .* at) (\S+) relerr .* sketch (\S+)", ln)
            if m:
                sketches.append((float(m.group(1)), [float(v) for v in m.group(2).split(",")]))
            m = re.search(r" reference (\S+)", ln)
            if m:
                ref_sketch[0] = [float(v) for v in m.group(1).split(",")]
            m = re.match(r"start at (\S+) relerr (\S+)", ln)
            if m:
                start = float(m.group(1))
                pts.append((start, float(m.group(2))))
            m = re.match(r"round (\d+) group (\d+) failed (\d+).*matching (\S+) s averaging (\S+) s at (\S+) relerr (\S+)", ln)
            if m:
                pts.append((float(m.group(6)), float(m.group(7))))
                rounds.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5))))
        peers[k] = (start, pts, rounds)
        sketch_of[k] = sketches
        if start is not None and "downloaded state" not in open(f).read():
            first_starts.append(start)
    starts = first_starts
    t0 = max(starts) if starts else None
    res = {"t0": t0, "peers": peers}
    live = [k for k in peers if k not in skip]
    reach = {}
    for k in live:
        hit = [t - t0 for t, e in peers[k][1] if e <= TARGET]
        reach[k] = hit[0] if hit else None
    res["reach"] = reach
    res["all"] = None if (not reach or None in reach.values()) else max(reach.values())
    reach2 = {}
    for k in live:
        hit = [t - t0 for t, e in peers[k][1] if e <= 1e-2]
        reach2[k] = hit[0] if hit else None
    res["all2"] = None if (not reach2 or None in reach2.values()) else max(reach2.values())
    res["final"] = {k: peers[k][1][-1][1] for k in live if peers[k][1]}
    # How far the live peers are from one another, by a fingerprint of their vectors: their
    # means (printed at the end), max |mean_k - the peers' mean| / the peers' mean.
    means = {}
    for k in live:
        m = re.search(r"final weight \S+ mean (\S+)", open(os.path.join(out, "%s-%d.out" % (tag, k))).read())
        if m:
            means[k] = float(m.group(1))
    mbar = sum(means.values()) / len(means) if means else float("nan")
    res["consensus"] = max(abs(v - mbar) / mbar for v in means.values()) if means else None
    res["by"] = "means"
    agreement = agreement_over_time(live, sketch_of, ref_sketch[0], t0)
    if agreement:
        res["consensus"], res["by"] = agreement[-1][1], "sketches"
        res["agreement"] = agreement
        kills = max(kill_times(tag), default=None)
        # the first time after the last kill from which they stay agreed
        res["agree_at"] = swarmsum.settled_from(agreement, TARGET, t0, kills)
    return res


def agreement_over_time(live, sketch_of, ref, t0):
    """[(t - t0, a)] after every report once each live peer has reported: a = the largest
    |sketch_a - sketch_b| / |sketch(global average)| over pairs of live peers (see
    tools/tern/swarm/swarm.c's print_sketch): how far apart the live peers' vectors are."""
    if not ref or not live or any(not sketch_of.get(k) for k in live):
        return []
    norm = sum(v * v for v in ref) ** 0.5
    events = sorted((t, k, sk) for k in live for t, sk in sketch_of[k])
    latest, series = {}, []
    for t, k, sk in events:
        latest[k] = sk
        if len(latest) < len(live):
            continue
        worst = max(sum((x - y) ** 2 for x, y in zip(latest[a], latest[b])) ** 0.5
                    for a in live for b in live if a < b) if len(live) > 1 else 0.0
        series.append((t - t0, worst / norm))
    return series


def kill_times(tag):
    """The wall-clock times of the kills driver.sh recorded for a run (none if it has no file)."""
    return [t for _, t in swarmsum.kills(out, tag)]


say("swarm benchmark (issue 6), one run in tests/wan/wan.sh: 8 peers, Virginia/Frankfurt/Tokyo/Oregon (2 each),")
say("AWS link figures x %s, vector of %d floats (%.1f MiB); error = ||x - avg|| / ||avg|| (L2), target %g" % (scale, count, count * 4 / 2**20, TARGET))
say("started: " + " ".join(params[5:]))
say()
rt, rwrong, rerrs = ring_time("ring")
ring = max(rt) if len(rt) == 8 and rwrong == 0 else None
if ring:
    say("ring (TERN_ALGO=ring): one call, exact (wrong 0 on all 8 ranks): %.3f s (slowest rank; ranks %.3f..%.3f)" % (ring, min(rt), max(rt)))
else:
    say("ring: no complete timing (%d ranks timed, %d wrong); errors: %s" % (len(rt), rwrong, "; ".join(rerrs[:3])))
rows = []
results = {}
NAMES = {"plain24": "Moshpit plain, grid 2x4", "fp1624": "Moshpit fp16, grid 2x4",
         "int824": "Moshpit 8-bit, grid 2x4", "plain": "Moshpit plain, grid 2x2x2",
         "gossip": "gossip (random pairs)", "kill2": "Moshpit 2x2x2, peers 1,2,4,7 killed in rounds 0-3",
         "kill24": "Moshpit 2x4, peers 3,4,1,6 killed in rounds 0-3",
         "churn": "Moshpit 2x4, a peer killed and restarted in each of rounds 0-5"}
SKIP = {"kill2": (1, 2, 4, 7), "kill24": (3, 4, 1, 6)}
for tag, name in NAMES.items():
    skip = SKIP.get(tag, ())
    if not glob.glob(os.path.join(out, tag + "-0.out")):
        continue
    r = swarm(tag, skip)
    results[tag] = r
    if r["t0"] is None:
        say("%s: no output" % name)
        rows.append((name, "no output", "", "", "", "", "", ""))
        continue
    fin = r["final"]
    worst = max(fin.values()) if fin else float("nan")
    nrounds = max((len(p[2]) for p in r["peers"].values()), default=0)
    per = []
    for k, p in sorted(r["peers"].items()):
        for rd in p[2]:
            per.append(rd)
    mt = [x[3] for x in per]
    av = [x[4] for x in per]
    t = r["all"]
    say("%s: every peer within 1e-2 %s" % (name, "at %.3f s" % r["all2"] if r["all2"] is not None else "never"))
    say("%s: %s; worst final error over %d peers %.3g after %d rounds; matching %.2f..%.2f s, averaging %.2f..%.2f s per round" % (
        name, ("every peer within %g at %.3f s" % (TARGET, t)) if t is not None else "NOT every peer within %g (peers that did: %s)" % (TARGET, [k for k, v in r["reach"].items() if v is not None]),
        len(fin), worst, nrounds, min(mt or [0]), max(mt or [0]), min(av or [0]), max(av or [0])))
    means = []
    for k in sorted(r["peers"]):
        f = os.path.join(out, "%s-%d.out" % (tag, k))
        m = re.search(r"final weight (\S+) mean (\S+)", open(f).read())
        if m:
            means.append("p%d w %s mean %s" % (k, m.group(1), m.group(2)))
    say("  final (weight, vector mean): %s" % ("; ".join(means) or "none"))
    for k, p in sorted(r["peers"].items()):
        say("  peer %d: reached %s, errors by round %s" % (k, "%.3f s" % r["reach"][k] if r["reach"].get(k) is not None else "-", " ".join("%.3g" % e for _, e in p[1])))
    say("  live peers agree to %.3g (relative, by their vectors' %s)%s" % (r["consensus"], r["by"], (
        "; within %g of each other from %.3f s" % (TARGET, r["agree_at"]) if r.get("agree_at") is not None else "")))
    ratio = ("%.2f" % (t / ring)) if (t is not None and ring) else "-"
    agree = "%.2f" % r["agree_at"] if r.get("agree_at") is not None else ("-" if r["by"] == "means" else "not reached")
    rows.append((name, "%.2f" % t if t is not None else "not reached", "%.2f" % r["all2"] if r["all2"] is not None else "not reached", "%.3g" % worst, "%.3g" % r["consensus"], agree, str(nrounds), ratio))
say()
for tag in ("kill2", "kill24", "churn"):
    f = os.path.join(out, tag + "-victims")
    kv = open(f).read().strip() if os.path.exists(f) else "none"
    say("kills in the Moshpit run %s: %s" % (tag, kv.replace("\n", "; ")))
ringkill_ran = os.path.exists(os.path.join(out, "ringkill-victims"))
killed = kill_times("ringkill")[-1] if ringkill_ran else None
_, _, ringkill_fails = swarmsum.allreduce(out, "ringkill")
rk = []
for k in range(8 if ringkill_ran else 0):
    f = os.path.join(out, "ringkill-%d.out" % k)
    txt = open(f).read().strip() if os.path.exists(f) else ""
    if k in ringkill_fails and killed:
        calls, t, status, msg = ringkill_fails[k]
        rk.append((k, calls, t - killed, status))
        say("ring, peer 5 killed: rank %d failed %.2f s after the kill, %s, %d calls done: %s" % (k, t - killed, status, calls, msg[:120]))
    else:
        say("ring, peer 5 killed: rank %d: %s" % (k, txt[:160] or "(no output: killed)" if k == 5 else txt[:160] or "(no output)"))
say()
def versus_ring(tag):
    r = results.get(tag, {})
    if not ring or r.get("t0") is None:
        return "%s: cannot be judged (ring or %s did not finish)" % (NAMES[tag], tag)
    if r["all"] is None:
        fin = r["final"] or {}
        return "%s: NOT every peer within %g (worst final error %s); within 1e-2 %s" % (
            NAMES[tag], TARGET, "%.3g" % max(fin.values()) if fin else "-",
            "at %.2f s = %.2f x ring" % (r["all2"], r["all2"] / ring) if r["all2"] is not None else "never")
    x = r["all"] / ring
    return "%s / ring = %.3f: %s" % (NAMES[tag], x, "MET" if x <= 0.5 else "MISSED by %.0f%%" % ((x / 0.5 - 1) * 100))


say("target Moshpit <= 0.5 x ring's time to within %g of the average:" % TARGET)
for tag in ("plain24", "fp1624", "int824", "plain", "gossip"):
    if tag in results:
        say("  " + versus_ring(tag))
for tag in ("kill2", "kill24", "churn"):
    r = results.get(tag)
    if r and r.get("consensus") is not None:
        fin = r["final"] or {}
        since = " from %.2f s on (after the last kill)" % r["agree_at"] if r.get("agree_at") is not None else ""
        say("  %s: the live peers %s within %g of each other%s (%.3g at the end, by their %s); %.3g to %.3g from the 8-peer average" % (
            NAMES[tag], "ARE" if r["consensus"] <= TARGET else "are NOT", TARGET, since, r["consensus"], r["by"],
            min(fin.values()) if fin else float("nan"), max(fin.values()) if fin else float("nan")))
if ringkill_ran:
    say("  ring with peer 5 killed: %d of 7 survivors failed (%s)" % (len(rk), ", ".join(sorted(set(x[3] for x in rk))) or "no failure seen"))
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
md = ["| scenario | every peer within 1e-3 (s) | within 1e-2 (s) | worst final error to the 8-peer average | live peers agree to (end) | live peers agree within 1e-3 from (s) | rounds | 1e-3 time / ring |", "|---|---|---|---|---|---|---|---|"]
if ring:
    md.append("| ring all-reduce (exact) | %.2f | %.2f | 0 (exact) | 0 | %.2f | - | 1 |" % (ring, ring, ring))
md += ["| %s | %s | %s | %s | %s | %s | %s | %s |" % row for row in rows]
open(os.path.join(out, "summary.md"), "w").write("\n".join(md) + "\n\n" + "\n".join(lines[[i for i, ln in enumerate(lines) if ln.startswith("target")][0]:]) + "\n")
print("\n".join(lines))

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 5))
colors = {"plain": "tab:blue", "fp1624": "tab:cyan", "plain24": "tab:green", "int824": "tab:olive", "gossip": "tab:brown",
          "churn": "tab:red", "kill2": "tab:purple", "kill24": "tab:pink"}
FAULTS = ("kill2", "kill24", "churn")
names = NAMES
# left: every scenario without kills, each peer's error to the 8-peer average
for tag, r in results.items():
    if r["t0"] is None or tag in FAULTS:
        continue
    first = True
    for k, p in sorted(r["peers"].items()):
        xs = [max(t - r["t0"], 0) for t, e in p[1]]
        ys = [max(e, 1e-7) for t, e in p[1]]
        ax.plot(xs, ys, "-o", color=colors[tag], ms=3, lw=0.8, alpha=0.7, drawstyle="steps-post",
                label=names[tag] if first else None)
        first = False
if ring:
    # the largest initial error of any peer in any scenario (the same vectors everywhere)
    e0 = max((p[1][0][1] for r in results.values() if r["t0"] is not None for p in r["peers"].values() if p[1]), default=1)
    ax.plot([0, ring, ring], [e0, e0, 1e-7], "k--", lw=1.5, label="ring all-reduce (exact at %.1f s)" % ring)
ax.text(0.99, 0.02, "an error of 0 (exact) is drawn at 1e-7; each peer's error holds until its next round", transform=ax.transAxes,
        ha="right", fontsize=7)
swarmsum.error_axes(ax, TARGET, "seconds since every peer started (ring: since its barrier)",
                    "relative L2 error to the 8-peer average",
                    "no failures")
ax.legend(fontsize=8, loc="center right")
# right: the runs with kills, how far apart the live peers are (by their sketches)
for tag in FAULTS:
    r = results.get(tag)
    if not r or not r.get("agreement"):
        continue
    xs = [max(t, 0) for t, a in r["agreement"]]
    ys = [max(a, 1e-7) for t, a in r["agreement"]]
    bx.plot(xs, ys, "-", color=colors[tag], lw=1.2, drawstyle="steps-post", label=names[tag])
    for t in kill_times(tag):
        bx.axvline(t - r["t0"], color=colors[tag], lw=0.6, ls=":")
swarmsum.error_axes(bx, TARGET, "seconds since every peer started (dotted: the kills)",
                    "largest relative distance between two live peers",
                    "peers killed (ring all-reduce: every survivor fails)")
bx.text(0.99, 0.02, "distance 0 drawn at 1e-7; estimated from 16 random projections (tern swarm --sketch)", transform=bx.transAxes,
        ha="right", fontsize=7)
bx.legend(fontsize=8, loc="upper right")
fig.suptitle("8 peers, 4 regions, %d floats, AWS links x %s (tests/wan/wan.sh)" % (count, scale))
fig.tight_layout()
fig.savefig(png, dpi=110)
