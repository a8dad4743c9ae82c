"""turns.py: the torch benchmarks' timing loop (overhead.py, torch_backend.py). Every rank runs
each callable's batch in turn, after a barrier, repetition after repetition; the order reverses
every other repetition (A B C, C B A, ...), so that no callable is always the one measured after
the barrier, first, or after Gloo's slow batch. A difference between two callables is taken
within each repetition and the median of those is the figure: the machine's load moves both
batches of a repetition alike, where the difference of two separate medians takes in whatever
the load did between them. Each batch starts with a quarter of its calls untimed: at 4 ranks on 2
cores the first few hundred calls after the barrier (and after Gloo's batch, where the ranks
slept) ran up to 100x slower than the rest, and a loop that measured one callable first after
them charged it that (docs/perf/torch_overhead.md).
"""
import statistics
import time

import torch.distributed as dist


def in_turns(fns, calls, reps):
    """{name: [(wall, cpu) per repetition]}: the mean wall-clock time of one call of
    fns[name] and the CPU time (this process's, all threads) it took, in us. calls is the
    batch: an int, or {name: int}."""
    times = {name: [] for name in fns}
    order = list(fns)
    for rep in range(reps):
        for name in order if rep % 2 == 0 else order[::-1]:
            fn, n = fns[name], calls[name] if isinstance(calls, dict) else calls
            dist.barrier()
            for _ in range(n // 4):
                fn()
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn()
            t1, c1 = time.perf_counter(), time.process_time()
            times[name].append(((t1 - t0) / n * 1e6, (c1 - c0) / n * 1e6))
    return times


def median(times, name, which=0):
    """The median over repetitions of one callable's wall (which=0) or CPU (1) time."""
    return statistics.median(t[which] for t in times[name])


def median_diff(times, a, b, which=0):
    """The median over repetitions of a's time less b's in the same repetition."""
    return statistics.median(x[which] - y[which] for x, y in zip(times[a], times[b]))
