#!/usr/bin/python3
"""summarize.py OUT PNG: reads run.sh's raw logs in OUT, writes OUT/summary.txt, OUT/summary.md and
the plot PNG (relative L2 error to the global average against time). Every figure comes from the
logs; a scenario that did not reach 1e-3 says so."""
import glob
import os
import re
import sys

TARGET = 1e-3
out, png = sys.argv[1], sys.argv[2]
params = open(os.path.join(out, "params")).read().split()
count = int(params[1])
scale = params[3]
lines = []


def say(s=""):
    lines.append(s)


def ring_time(tag):
    times, wrong, errs = [], 0, []
    for f in sorted(glob.glob(os.path.join(out, tag + "-*.out"))):
        for ln in open(f):
            m = re.search(r"seconds_per_iter (\S+) wrong (\d+)", ln)
            if m:
                times.append(float(m.group(1)))
                wrong += int(m.group(2))
    for f in sorted(glob.glob(os.path.join(out, tag + "-*.err"))):
        errs += [ln.strip() for ln in open(f) if ln.strip()]
    return times, wrong, errs


def swarm(tag, skip=()):
    peers = {}
    for k in range(8):
        f = os.path.join(out, "%s-%d.out" % (tag, k))
        if not os.path.exists(f):
            continue
        start, pts, rounds = None, [], []
        for ln in open(f):
            m = re.match(r"start at (\S+) relerr (\S+)", ln)
            if m:
                start = float(m.group(1))
                pts.append((start, float(m.group(2))))
            m = re.match(r"round (\d+) group (\d+) failed (\d+).*matching (\S+) s averaging (\S+) s at (\S+) relerr (\S+)", ln)
            if m:
                pts.append((float(m.group(6)), float(m.group(7))))
                rounds.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5))))
        peers[k] = (start, pts, rounds)
    starts = [p[0] for p in peers.values() if p[0] is not None]
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
    return res


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
for tag, name, skip in (("plain", "Moshpit plain", ()), ("int8", "Moshpit 8-bit", ()), ("plain24", "Moshpit plain, grid 2x4", ()), ("int824", "Moshpit 8-bit, grid 2x4", ()), ("kill", "Moshpit, peers 1,3,5,7 killed in rounds 0-3", (1, 3, 5, 7)), ("kill2", "Moshpit, peers 1,2,4,7 killed in rounds 0-3", (1, 2, 4, 7))):
    r = swarm(tag, skip)
    results[tag] = r
    if r["t0"] is None:
        say("%s: no output" % name)
        rows.append((name, "no output", "", "", "", ""))
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
    say("  final (weight, vector mean; the global average's mean is %.6g): %s" % (4.5 * 4 * (count // 7 * 7) / count + 4.5 * sum(1 + i for i in range(count % 7)) / count if count % 7 else 4.5 * 4, "; ".join(means) or "none"))
    for k, p in sorted(r["peers"].items()):
        say("  peer %d: reached %s, errors by round %s" % (k, "%.3f s" % r["reach"][k] if r["reach"].get(k) is not None else "-", " ".join("%.3g" % e for _, e in p[1])))
    ratio = ("%.2f" % (t / ring)) if (t is not None and ring) else "-"
    rows.append((name, "%.2f" % t if t is not None else "not reached", "%.2f" % r["all2"] if r["all2"] is not None else "not reached", "%.3g" % worst, str(nrounds), ratio))
say()
for tag in ("kill", "kill2"):
    f = os.path.join(out, tag + "-victims")
    kv = open(f).read().strip() if os.path.exists(f) else "none"
    say("kills in the Moshpit run %s: %s" % (tag, kv.replace("\n", "; ")))
killed = None
if os.path.exists(os.path.join(out, "ringkill-victims")):
    killed = float(open(os.path.join(out, "ringkill-victims")).read().split()[-1])
rk = []
for k in range(8):
    f = os.path.join(out, "ringkill-%d.out" % k)
    txt = open(f).read().strip() if os.path.exists(f) else ""
    m = re.search(r"failed after (\d+) calls at (\S+): (\S+): (.*)", txt)
    if m and killed:
        rk.append((k, int(m.group(1)), float(m.group(2).rstrip(":")) - killed, m.group(3)))
        say("ring, peer 5 killed: rank %d failed %.2f s after the kill, %s, %s calls done: %s" % (k, float(m.group(2).rstrip(":")) - killed, m.group(3), m.group(1), m.group(4)[:120]))
    else:
        say("ring, peer 5 killed: rank %d: %s" % (k, txt[:160] or "(no output: killed)" if k == 5 else txt[:160] or "(no output)"))
say()
plain = results.get("plain", {}).get("all")
if ring and plain is not None:
    ratio = plain / ring
    say("target Moshpit <= 0.5 x ring: Moshpit plain / ring = %.3f: %s" % (ratio, "MET" if ratio <= 0.5 else "MISSED by %.0f%%" % ((ratio / 0.5 - 1) * 100)))
    i8 = results.get("int8", {}).get("all")
    if i8 is not None:
        r8 = i8 / ring
        say("Moshpit 8-bit / ring = %.3f: %s" % (r8, "MET" if r8 <= 0.5 else "MISSED by %.0f%%" % ((r8 / 0.5 - 1) * 100)))
    else:
        r8 = results.get("int8", {})
        fin = r8.get("final") or {}
        say("Moshpit 8-bit: did not bring every peer within %g (worst final error %s); within 1e-2 %s" % (
            TARGET, "%.3g" % max(fin.values()) if fin else "-",
            "at %.2f s = %.2f x ring" % (r8["all2"], r8["all2"] / ring) if r8.get("all2") is not None else "never"))
else:
    say("target: cannot be judged (ring or Moshpit plain did not finish)")
p24 = results.get("plain24", {}).get("all")
if ring and p24 is not None:
    r24 = p24 / ring
    say("grid 2x4: Moshpit plain / ring = %.3f: %s" % (r24, "MET" if r24 <= 0.5 else "MISSED by %.0f%%" % ((r24 / 0.5 - 1) * 100)))
i24 = results.get("int824", {})
if ring and i24.get("all") is not None:
    say("grid 2x4: Moshpit 8-bit / ring = %.3f" % (i24["all"] / ring))
elif ring and i24.get("all2") is not None:
    say("grid 2x4: Moshpit 8-bit not within %g; within 1e-2 at %.2f s = %.2f x ring" % (TARGET, i24["all2"], i24["all2"] / ring))
ka = results.get("kill", {}).get("all")
kb = results.get("kill2", {}).get("all")
say("kill scenarios: Moshpit (1,3,5,7) %s; Moshpit (1,2,4,7) %s; ring: %d of 7 survivors failed (%s)" % (
    "survivors within %g at %.3f s" % (TARGET, ka) if ka is not None else "survivors NOT within %g of the 8-peer average" % TARGET,
    "survivors within %g at %.3f s" % (TARGET, kb) if kb is not None else "survivors NOT within %g of the 8-peer average" % TARGET,
    len(rk), ", ".join(sorted(set(x[3] for x in rk))) or "no failure seen"))
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
md = ["| scenario | every peer within 1e-3 (s) | within 1e-2 (s) | worst final rel. error | rounds | 1e-3 time / ring |", "|---|---|---|---|---|---|"]
if ring:
    md.append("| ring all-reduce (exact) | %.2f | %.2f | 0 (exact) | - | 1 |" % (ring, ring))
md += ["| %s | %s | %s | %s | %s | %s |" % row for row in rows]
open(os.path.join(out, "summary.md"), "w").write("\n".join(md) + "\n\n" + "\n".join(lines[[i for i, ln in enumerate(lines) if ln.startswith("target")][0]:]) + "\n")
print("\n".join(lines))

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(8, 5))
colors = {"plain": "tab:blue", "int8": "tab:orange", "plain24": "tab:green", "int824": "tab:olive", "kill": "tab:red", "kill2": "tab:purple"}
names = {"plain": "Moshpit plain", "int8": "Moshpit 8-bit", "plain24": "Moshpit plain, grid 2x4", "int824": "Moshpit 8-bit, grid 2x4", "kill": "Moshpit, peers 1,3,5,7 killed in rounds 0-3",
         "kill2": "Moshpit, peers 1,2,4,7 killed in rounds 0-3"}
for tag, r in results.items():
    if r["t0"] is None:
        continue
    first = True
    for k, p in sorted(r["peers"].items()):
        xs = [max(t - r["t0"], 0) for t, e in p[1]]
        ys = [max(e, 1e-7) for t, e in p[1]]
        ax.plot(xs, ys, "-o", color=colors[tag], ms=3, lw=0.8, alpha=0.7, drawstyle="steps-post",
                label=names[tag] if first else None)
        first = False
if ring:
    e0 = 7 / 9  # peer 7's initial error with the same vectors: |8 - 4.5| / 4.5
    ax.plot([0, ring, ring], [e0, e0, 1e-7], "k--", lw=1.5, label="ring all-reduce (exact at %.1f s)" % ring)
ax.axhline(TARGET, color="gray", lw=0.8, ls=":")
ax.set_yscale("log")
ax.set_ylim(5e-8, 2)
ax.text(0.99, 0.02, "an error of 0 (exact) is drawn at 1e-7; each peer's error holds until its next round", transform=ax.transAxes,
        ha="right", fontsize=7)
ax.set_xlabel("seconds since every peer started (ring: since its barrier)")
ax.set_ylabel("relative L2 error to the 8-peer average")
ax.set_title("8 peers, 4 regions, %d floats, AWS links x %s (tests/wan/wan.sh)" % (count, scale))
ax.legend(fontsize=8, loc="center right")
fig.tight_layout()
fig.savefig(png, dpi=110)
