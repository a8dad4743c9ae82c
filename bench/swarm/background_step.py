"""background_step.py [STEPS] [REPEATS]: the training step's time with a swarm round in flight
against without any averaging (docs/SWARM_TRAINING.md, "Background averaging").

Two peers on 127.0.0.1, each its own process, train examples/swarm_train's language model
(1.04 M parameters, batch 4 x 32 bytes, one torch thread). Each repeat times STEPS steps in
three phases, interleaved: "none" (no averaging), "background" (at each step's start
Averager.step(wait=False) on the parameters, collected with keep_local_progress at the next
step's start), "blocking" (Averager.step(wait=True) after each step, for scale). The step time is
forward + backward + Adam, measured around those three only; the wait to collect is reported
apart. Prints one line per phase: median step ms over all repeats, and the ratio to "none".
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
    for _ in range(repeats):
        for phase in PHASES:
            # a round of every phase, so that both peers stay in step between phases
            avg.step(1.0)
            pending = None
            for _ in range(steps):
                if phase == "background":
                    if pending is not None:
                        t = time.perf_counter()
                        pending.result(timeout=60)
                        waits.append(time.perf_counter() - t)
                    pending = avg.step(1.0, wait=False, keep_local_progress=True)
                x, y = lm.batch(train, 4, gen)
                t = time.perf_counter()
                opt.zero_grad()
                model.loss(x, y).backward()
                opt.step()
                times[phase].append(time.perf_counter() - t)
                if phase == "blocking":
                    avg.step(1.0)
            if pending is not None:
                pending.result(timeout=60)
    sw.leave()
    return times, waits


def main():
    steps = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] != "peer" else 20
    if len(sys.argv) > 1 and sys.argv[1] == "peer":
        times, waits = peer(sys.argv[2], sys.argv[3] if sys.argv[3] != "-" else None,
                            int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
        base = statistics.median(times["none"])
        for p in PHASES:
            m = statistics.median(times[p])
            print(f"{p:10s} step median {m * 1e3:7.1f} ms  ({m / base:.3f} x none)  "
                  f"{len(times[p])} steps", flush=True)
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
