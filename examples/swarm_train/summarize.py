"""summarize.py OUT_DIR PNG CSV: the medians of bench.sh's runs (docs/SWARM_TRAINING.md).

OUT_DIR holds one directory per run, CONFIG-REP (ddp-1, diloco-2, collab-churn-3, ddp-kill-1...),
each with curve.csv (evaluate.py: seconds since the launch, validation loss) and start (the
seconds from the launch to the training's start: every peer loaded and in). Times are counted
from the start. Three quality targets: the median of the DDP runs' last losses (the quality DDP
reaches in the runs' training time), the worst of the healthy configurations' median last
losses (one they all reach, to compare their times), and the worst of all (churn included, to
compare churn with health). Per configuration and target: each run's
time to reach it (the first snapshot at or under it; "-" when it never did), the median over
the runs (a run that did not reach it counts as later than any that did), and its ratio to
DDP's median (the churn runs also to their healthy configuration's). Writes a table on stdout, one row per run to CSV, and
the loss against the time since the start, one colour per configuration, to PNG.
"""
import csv
import glob
import math
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["ddp", "collab", "diloco", "diloco-ov", "diloco-ov1", "collab-churn", "diloco-churn",
         "diloco-ov-churn", "diloco-ov1-churn", "ddp-kill"]


def load(d):
    with open(os.path.join(d, "start")) as f:
        start = float(f.read())
    with open(os.path.join(d, "curve.csv")) as f:
        rows = [(float(r["seconds"]) - start, float(r["val_loss"])) for r in csv.DictReader(f)]
    return start, sorted(rows)


def fmt(t, digits=1):
    return "" if math.isinf(t) else f"{t:.{digits}f}"


def ratio(a, b):
    return "" if math.isinf(a) or math.isinf(b) else f"{a / b:.2f}"


def median(xs):
    """The median, math.inf (not reached) sorting after every time."""
    return statistics.median_low(xs) if len(xs) % 2 == 0 else statistics.median(xs)


def main():
    out, png, table = sys.argv[1:4]
    runs = {}
    for d in sorted(glob.glob(os.path.join(out, "*-[0-9]"))):
        m = re.fullmatch(r"(.*)-(\d+)", os.path.basename(d))
        if m and os.path.exists(os.path.join(d, "curve.csv")) and \
                os.path.exists(os.path.join(d, "start")):
            runs.setdefault(m.group(1), []).append((int(m.group(2)), d) + load(d))
    cfgs = [c for c in ORDER if c in runs]
    last = {c: median([rows[-1][1] for _, _, _, rows in runs[c]]) for c in cfgs}
    if "ddp" not in last:
        # every target below is measured against DDP's quality
        found = ", ".join(cfgs) or "none"
        sys.exit(f"summarize.py: no finished ddp-N run in {out} (found: {found}); the targets "
                 "are DDP's quality, so run a ddp-N beside the others")
    target = last["ddp"]
    # a second, looser target: the worst of the healthy configurations' median last losses,
    # which each of them reaches, so that their times can be compared
    common = max(last[c] for c in ("ddp", "collab", "diloco", "diloco-ov1") if c in last)
    # and the worst of every configuration's (churn included), to compare churn with health
    loosest = max(last[c] for c in cfgs if c != "ddp-kill")
    targets = ((target, "the median of the DDP runs' last losses"),
               (common, "the worst healthy configuration's median last loss"),
               (loosest, "the worst configuration's median last loss, churn included"))
    hits = {}
    with open(table, "w") as f:
        f.write("config,rep,start_s,last_s,last_loss" +
                "".join(f",target{k},reached{k}_s" for k in range(len(targets))) + "\n")
        for cfg in cfgs:
            for rep, d, start, rows in runs[cfg]:
                t = [next((t for t, v in rows if v <= x), math.inf) for x, _ in targets]
                hits.setdefault(cfg, []).append(t)
                f.write(f"{cfg},{rep},{start:.1f},{rows[-1][0]:.1f},{rows[-1][1]:.4f}" +
                        "".join(f",{x:.4f},{fmt(h)}" for (x, _), h in zip(targets, t)) + "\n")
    print("median last loss (120 s): " + ", ".join(f"{c} {last[c]:.3f}" for c in cfgs))
    for k, (x, what) in enumerate(targets):
        print(f"\ntarget {x:.3f}: {what}")
        print(f"{'config':14s} {'runs: time to target (s)':26s} {'median':>7s} {'x DDP':>6s}  "
              f"{'x healthy':>9s}")
        med = {c: median([h[k] for h in hits[c]]) for c in cfgs}
        for cfg in cfgs:
            healthy = cfg.replace("-churn", "")
            vs = ratio(med[cfg], med.get(healthy, math.inf)) if cfg.endswith("-churn") else ""
            print(f"{cfg:14s} {', '.join(fmt(h[k]) or '-' for h in hits[cfg]):26s} "
                  f"{fmt(med[cfg], 0) or '-':>7s} {ratio(med[cfg], med['ddp']):>6s}  {vs:>9s}")
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    colours = dict(zip(ORDER, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for cfg in [c for c in ORDER if c in runs]:
        for i, (rep, d, start, rows) in enumerate(runs[cfg]):
            ax.plot([t for t, _ in rows], [v for _, v in rows], marker=".", alpha=0.75,
                    color=colours[cfg], label=cfg if i == 0 else None)
    ax.axhline(target, color="grey", linestyle="--", linewidth=1, label="DDP's median last loss")
    ax.axhline(common, color="grey", linestyle=":", linewidth=1,
               label="worst healthy median last loss")
    ax.set_xlabel("wall-clock seconds since the training's start (every peer in)")
    ax.set_ylabel("validation loss (nats / byte)")
    ax.set_title(os.environ.get("TITLE", "1.04 M-parameter byte LM, 8 peers in 4 emulated "
                                "regions, each run"))
    ax.set_ylim(top=min(4.0, ax.get_ylim()[1]))
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
