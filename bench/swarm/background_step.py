"""background_step.py [STEPS] [REPEATS]: the training step's time with a swarm round in flight
against without any averaging (docs/SWARM_TRAINING.md, "Background averaging").

Two peers on 127.0.0.1, each its own process, train examples/swarm_train's language model
(1.04 M parameters, batch 4 x 32 bytes, one torch thread). Each repeat times STEPS steps in
three phases, interleaved (repeat r starts with phase r mod 3): "none" (no averaging), "background" (at each step's start
Averager.step(wait=False) on the parameters, collected with keep_local_progress at the next
step's start), "blocking" (Averager.step(wait=True) after each step, for scale). A step's time is
the whole iteration as the training loop sees it: collecting the previous round (its wait
included), starting the next, forward, backward, Adam, and the blocking round in that phase.
Prints per phase the median step over all repeats, and the median over repeats of the ratio of
the repeat's median step to that repeat's "none" (each repeat's phases run back to back, so the
machine's load moves all three alike); then the median wait to collect.
"""
import os
import statistics
import subprocess
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "swarm_train"))
import lm  # noqa: E402

import tern.swarm  # noqa: E402

PHASES = ("none", "background", "blocking")


def peer(listen, join, steps, repeats, seed):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = lm.LM()
    train, _ = lm.split(lm.text_bytes(1 << 20))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    sw = tern.swarm.Swarm(listen, "bg-bench", bootstrap=[join] if join else [])
    print(sw.address, flush=True)
    avg = tern.swarm.Averager(sw, list(model.parameters()), min_group=2, target_group=2,
                              match_timeout=20, average_timeout=20)
    gen = torch.Generator().manual_seed(seed)
    times = {p: [] for p in PHASES}
    waits = []
    for rep in range(repeats):
        # each repeat starts with another phase, so that no phase always comes first
        for phase in PHASES[rep % 3:] + PHASES[:rep % 3]:
            # a round of every phase, so that both peers stay in step between phases
            avg.step(1.0)
            pending = None
            phase_times = []
            for _ in range(steps):
                x, y = lm.batch(train, 4, gen)
                t = time.perf_counter()
                if phase == "background":
                    if pending is not None:
                        pending.result(timeout=60)
                        waits.append(time.perf_counter() - t)
                    pending = avg.step(1.0, wait=False, keep_local_progress=True)
                opt.zero_grad()
                model.loss(x, y).backward()
                opt.step()
                if phase == "blocking":
                    avg.step(1.0)
                phase_times.append(time.perf_counter() - t)
            if pending is not None:
                pending.result(timeout=60)
            times[phase].append(phase_times)
    sw.leave()
    return times, waits


def main():
    steps = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] != "peer" else 20
    if len(sys.argv) > 1 and sys.argv[1] == "peer":
        times, waits = peer(sys.argv[2], sys.argv[3] if sys.argv[3] != "-" else None,
                            int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
        for p in PHASES:
            m = statistics.median([t for rep in times[p] for t in rep])
            ratio = statistics.median(statistics.median(r) / statistics.median(n)
                                      for r, n in zip(times[p], times["none"]))
            print(f"{p:10s} step median {m * 1e3:7.1f} ms  median ratio to none {ratio:.3f}  "
                  f"{sum(len(r) for r in times[p])} steps", flush=True)
        print(f"background: collecting waited median {statistics.median(waits) * 1e3:.1f} ms",
              flush=True)
        return
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    me = [sys.executable, __file__, "peer"]
    a = subprocess.Popen(me + ["127.0.0.1:0", "-", str(steps), str(repeats), "1"],
                         stdout=subprocess.PIPE, text=True)
    addr = a.stdout.readline().strip()
    b = subprocess.Popen(me + ["127.0.0.1:0", addr, str(steps), str(repeats), "2"],
                         stdout=subprocess.PIPE, text=True)
    b.stdout.readline()
    for name, p in (("peer 0", a), ("peer 1", b)):
        out = p.stdout.read()
        p.wait()
        print(f"{name}:\n{out}", end="")


if __name__ == "__main__":
    main()
