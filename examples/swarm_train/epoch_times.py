"""epoch_times.py OUT_DIR PNG: what an outer step costs, DiLoCo against DiLoCo with the outer
round overlapped (bench.sh's diloco-N, diloco-ov-N: landing at the next boundary, and
diloco-ov1-N: landing after one inner step; docs/SWARM_TRAINING.md).

From every peer's progress lines (OUT/RUN/peer-K.err, train.py: "epoch E t T ... averaging
M+A s boundary B s"): the seconds between a peer's consecutive epochs (one outer step: H inner
steps plus whatever the boundary blocks), and the seconds the boundary's step() call took (the
last inner step, plus, without overlap, the whole round; with overlap, collecting the round
started one epoch earlier, the outer step and starting the next). A peer's first epoch (it
includes the start) is left out, and churn runs are not read.
Prints the medians per configuration over every peer and run; PNG: the two as bars.
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
    fig, ax = plt.subplots(figsize=(6, 3.6))
    names = list(rows)
    ax.bar([i - 0.2 for i in range(len(names))], [rows[c][0] for c in names], 0.4,
           label="outer step (H = 5 inner steps + boundary)")
    ax.bar([i + 0.2 for i in range(len(names))], [rows[c][1] for c in names], 0.4,
           label="boundary step() call")
    for i, c in enumerate(names):
        for dx, v in ((-0.2, rows[c][0]), (0.2, rows[c][1])):
            ax.text(i + dx, v, f"{v:.1f}", ha="center", va="bottom")
    what = {"diloco": "no overlap", "diloco-ov": "overlap=True", "diloco-ov1": "overlap=1"}
    ax.set_xticks(range(len(names)), [f"{c}\n({what[c]})" for c in names])
    ax.set_ylabel("seconds (median over peers and epochs)")
    ax.set_title("DiLoCo, 8 peers in 4 emulated regions")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
