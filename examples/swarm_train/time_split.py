"""time_split.py OUT_DIR: where a step's wall-clock goes, DDP against DiLoCo (docs/SWARM_TRAINING.md).

From every peer's progress lines (OUT/RUN/peer-K.err, train.py):
  ddp     "rank R step S t T in allreduce A s computing C s" (cumulative since the start): per
          step, compute (batch, forward, backward, Adam), the allreduce (its wait for the slowest
          rank included) and the rest (copies in and out of the flat buffer, snapshots)
  diloco  "epoch E ... averaging M+A s boundary B s computing C s in N steps" (since the last
          epoch line): per outer step, the compute of its inner steps but the boundary's, the
          boundary's step() (the last inner Adam step, the pseudo-gradient, the round: matching
          M, the wait for the slowest peer to reach the boundary included, and averaging A, then
          the outer step) and the rest
Each rank's or peer's figures are taken over its whole run (its first epoch left out: it holds
the start); the table gives the mean over the ranks or peers of every run of a configuration
(the DDP and DiLoCo runs, churn left out), as seconds and as shares of the wall-clock (means,
not medians, so that the parts add up to the whole).
"""
import glob
import os
import re
import statistics
import sys

DDP = re.compile(r"rank \d+ step (\d+) t ([\d.]+) in allreduce ([\d.]+) s computing ([\d.]+) s")
DILOCO = re.compile(r"epoch (\d+) t ([\d.]+) group (\d+) .* averaging ([\d.]+)\+([\d.]+) s "
                    r"boundary ([\d.]+) s computing ([\d.]+) s in (\d+) steps")


def ddp_rank(path):
    """(seconds per step: wall, compute, allreduce) from the first to the last progress line."""
    rows = [tuple(map(float, m.groups())) for m in map(DDP.search, open(path, errors="replace"))
            if m]
    if len(rows) < 2:
        return None
    (s0, t0, a0, c0), (s1, t1, a1, c1) = rows[0], rows[-1]
    n = s1 - s0
    return (t1 - t0) / n, (c1 - c0) / n, (a1 - a0) / n


def diloco_peer(path):
    """(seconds per outer step: wall, compute, boundary, matching, averaging; inner steps per
    outer step) over the peer's epochs after its first."""
    rows = [m.groups() for m in map(DILOCO.search, open(path, errors="replace")) if m]
    if len(rows) < 3:
        return None
    n = len(rows) - 1
    wall = (float(rows[-1][1]) - float(rows[0][1])) / n
    later = rows[1:]

    def mean(i):
        return sum(float(r[i]) for r in later) / n
    return wall, mean(6), mean(5), mean(3), mean(4), mean(7)


def share(x, wall):
    return f"{x:7.3f} s {100 * x / wall:5.1f}%"


def main():
    out = sys.argv[1]
    for cfg, read in (("ddp", ddp_rank), ("diloco", diloco_peer)):
        per = [r for d in sorted(glob.glob(os.path.join(out, f"{cfg}-[0-9]")))
               for f in sorted(glob.glob(os.path.join(d, "peer-*.err"))) for r in [read(f)] if r]
        if not per:
            continue
        med = [statistics.fmean(col) for col in zip(*per)]
        if cfg == "ddp":
            wall, comp, ar = med
            print(f"ddp, per step ({len(per)} ranks): wall {wall:.3f} s, compute "
                  f"{share(comp, wall)}, allreduce {share(ar, wall)}, rest "
                  f"{share(wall - comp - ar, wall)}")
        else:
            wall, comp, bound, match, avg, steps = med
            print(f"diloco, per outer step of {steps:.0f} inner steps ({len(per)} peers): wall "
                  f"{wall:.3f} s, inner compute {share(comp, wall)} ({comp / steps:.3f} s a "
                  f"step), boundary {share(bound, wall)} of which matching "
                  f"{share(match, wall)} and averaging {share(avg, wall)}, rest "
                  f"{share(wall - comp - bound, wall)}")


if __name__ == "__main__":
    main()
