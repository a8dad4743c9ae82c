"""swarmsum.py: what summarize.py and fair_summary.py share: reading the raw logs that run.sh and
fair.sh leave in OUT, and the plots' axes. A run TAG of wan_allreduce leaves OUT/TAG-R.out per rank R; a run with kills
leaves OUT/TAG-victims, a line "... killed PEER at T" per kill (T: CLOCK_REALTIME seconds)."""
import glob
import os
import re

TIMED = re.compile(r"seconds_per_iter (\S+) wrong (\d+)")
FAILED = re.compile(r"rank (\d+) failed after (\d+) calls at (\S+): (\S+): (.*)")
KILLED = re.compile(r"killed (\d+) at (\S+)")


def allreduce(out, tag):
    """What run TAG's ranks printed: (times, wrong, fails), with times each timed rank's seconds
    per call, wrong the wrong elements over them all, and fails {rank: (calls done, T, status,
    message)} for each rank whose call failed (wan_allreduce --until-error)."""
    times, wrong, fails = [], 0, {}
    for f in sorted(glob.glob(os.path.join(out, tag + "-[0-9].out"))):
        for ln in open(f):
            m = TIMED.search(ln)
            if m:
                times.append(float(m.group(1)))
                wrong += int(m.group(2))
            m = FAILED.search(ln)
            if m:
                fails[int(m.group(1))] = (int(m.group(2)), float(m.group(3).rstrip(":")),
                                          m.group(4).rstrip(":"), m.group(5))
    return times, wrong, fails


def kills(out, tag):
    """[(peer, T)] of run TAG's kills, in the order made; [] if it had none."""
    f = os.path.join(out, tag + "-victims")
    if not os.path.exists(f):
        return []
    return [(int(m.group(1)), float(m.group(2))) for m in KILLED.finditer(open(f).read())]


def settled_from(series, target, t0, after):
    """The first t of series [(t - t0, value)] from which value stays within target, counting only
    times from `after` on (None: no such time, or after=None for no bound)."""
    ok = None
    for t, v in series:
        if v > target:
            ok = None
        elif ok is None and (after is None or t + t0 >= after):
            ok = t
    return ok


def error_axes(ax, target, xlabel, ylabel, title):
    """Axes of errors (or distances) against seconds: a log scale down to 5e-8, where an error of
    0 is drawn at 1e-7, and the target dotted."""
    ax.axhline(target, color="gray", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.set_ylim(5e-8, 2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
