"""epoch_times.py OUT_DIR PNG: what an outer step costs, DiLoCo against DiLoCo with the outer
round overlapped (bench.sh's diloco-N, diloco-ov-N: landing at the next boundary, and
diloco-ov1-N: landing after one inner step; docs/SWARM_TRAINING.md).

From every peer's progress lines (OUT/RUN/peer-K.err, train.py: "epoch E t T ... averaging
M+A s boundary B s"): the seconds between a peer's consecutive epochs (one outer step: H inner
steps plus whatever the boundary blocks), and the seconds the boundary's step() call took (the
last inner step, plus, without overlap, the whole round; with overlap, collecting the round
started one epoch earlier, the outer step and starting the next). A peer's first epoch (it
includes the start) is left out, and churn runs are not read.
Prints the medians per configuration over every peer and run, and per run with its load;
PNG: the two per run, with its load (runs at different loads are not comparable).
"""
import glob
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LINE = re.compile(r"epoch (\d+) t ([\d.]+) group (\d+) .* averaging ([\d.]+)\+([\d.]+) s "
                  r"boundary ([\d.]+) s")


def runs(out, cfg):
    for d in sorted(glob.glob(os.path.join(out, f"{cfg}-[0-9]"))):
        yield d


def load_of(d):
    """The 1-minute load average before and after the run (bench.sh's OUT/RUN/load)."""
    try:
        return "-".join(line.split()[1] for line in open(os.path.join(d, "load")))
    except OSError:
        return "?"


def measure(out, cfg, per_run=None):
    step, block, match, avg = [], [], [], []
    for d in runs(out, cfg):
        n = len(step)
        for f in glob.glob(os.path.join(d, "peer-*.err")):
            prev = None
            for line in open(f, errors="replace"):
                m = LINE.search(line)
                if not m:
                    prev = None if "joined" in line else prev
                    continue
                e, t, group = int(m.group(1)), float(m.group(2)), int(m.group(3))
                if prev is not None and e == prev[0] + 1 and e >= 2:
                    step.append(t - prev[1])
                    block.append(float(m.group(6)))
                if group > 0:
                    match.append(float(m.group(4)))
                    avg.append(float(m.group(5)))
                prev = (e, t)
        if per_run is not None and len(step) > n:
            per_run.append((os.path.basename(d), statistics.median(step[n:]),
                            statistics.median(block[n:]), load_of(d)))
    return step, block, match, avg


def main():
    out, png = sys.argv[1:3]
    rows, per_run = {}, []
    print("\nouter step (s between a peer's epochs) and the boundary's blocking step() (s); "
          "medians over every peer's epochs")
    print(f"{'config':10s} {'epochs':>6s} {'outer step':>10s} {'boundary':>9s} "
          f"{'matching':>9s} {'averaging':>9s}")
    for cfg in ("diloco", "diloco-ov", "diloco-ov1"):
        step, block, match, avg = measure(out, cfg, per_run)
        if not step:
            continue
        rows[cfg] = (statistics.median(step), statistics.median(block))
        print(f"{cfg:10s} {len(step):6d} {rows[cfg][0]:10.2f} {rows[cfg][1]:9.2f} "
              f"{statistics.median(match):9.2f} {statistics.median(avg):9.2f}")
    print("per run: outer step, boundary (medians over its peers' epochs), load before-after")
    for name, st, bl, load in per_run:
        print(f"  {name:13s} {st:6.2f} {bl:6.2f}  {load}")
    for ov in ("diloco-ov", "diloco-ov1"):
        if "diloco" in rows and ov in rows:
            print(f"{ov}: outer step {rows[ov][0] / rows['diloco'][0]:.3f} x, boundary "
                  f"{rows[ov][1] / rows['diloco'][1]:.3f} x without overlap")
    # per run, in the order they ran within each configuration: runs at different loads are
    # not comparable, so the figure shows each run with its load rather than pooled medians
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = range(len(per_run))
    ax.bar([i - 0.2 for i in x], [r[1] for r in per_run], 0.4,
           label="outer step (H = 5 inner steps + boundary)")
    ax.bar([i + 0.2 for i in x], [r[2] for r in per_run], 0.4, label="boundary step() call")
    for i, r in enumerate(per_run):
        ax.text(i - 0.2, r[1], f"{r[1]:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x), [f"{r[0]}\nload {r[3]}" for r in per_run], fontsize=6.5)
    ax.set_ylabel("seconds (median over the run's peers)")
    ax.set_title("DiLoCo: diloco no overlap, diloco-ov overlap=True, diloco-ov1 overlap=1")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
