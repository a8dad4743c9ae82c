#!/usr/bin/env python3
"""replay.py PLAN.json JOB [--time-scale T] [--schedule 1f1b|gpipe]: the iteration time of the
exact schedule `tern pipe` runs (tools/tern/pipe/run.c), replayed event by event from the plan's
figures: each stage runs its forwards and backwards in order (1F1B: S - s - 1 warm-up forwards,
then one forward one backward, then the remaining backwards; GPipe: all forwards first), a
forward waits for its activation and a backward for its gradient, a send does not hold the
stage, and a message takes the hop's transfer seconds (one at a time per hop and direction, in
order) plus its one-way latency. Compute and transfer are divided by T, latency is not, as in
tern pipe. Independent of src/plan's closed form: it tells whether a gap between the plan's
prediction and tern pipe's measurement is the model's or the run's. Prints the seconds."""
import argparse
import json


def replay(stages, hops, m, schedule):
    S = len(stages)
    free = [0.0] * S                          # when each stage's compute is next free
    link = {}                                 # (hop, direction) -> when its wire is free
    arrive = {}                               # (stage, kind, microbatch) -> arrival time
    order = []
    for s in range(S):
        warm = m if schedule == "gpipe" else min(S - s - 1, m)
        ops = [("f", j) for j in range(warm)]
        for j in range(m - warm):
            ops += [("f", warm + j), ("b", j)]
        ops += [("b", j) for j in range(m - warm, m)]
        order.append(ops)
    pos = [0] * S
    done = 0
    total = sum(len(o) for o in order)
    while done < total:
        progressed = False
        for s in range(S):
            while pos[s] < len(order[s]):
                kind, j = order[s][pos[s]]
                need = None
                if kind == "f" and s > 0:
                    need = (s, "f", j)
                if kind == "b" and s < S - 1:
                    need = (s, "b", j)
                if need is not None and need not in arrive:
                    break
                start = max(free[s], arrive.get(need, 0.0))
                end = start + (stages[s][0] if kind == "f" else stages[s][1])
                free[s] = end
                to = s + 1 if kind == "f" else s - 1
                if 0 <= to < S:
                    h = s if kind == "f" else s - 1
                    key = (h, kind)
                    wire = max(end, link.get(key, 0.0))
                    link[key] = wire + hops[h][1]
                    arrive[(to, kind, j)] = wire + hops[h][1] + hops[h][0]
                pos[s] += 1
                done += 1
                progressed = True
        if not progressed:
            raise SystemExit("replay.py: the schedule deadlocks")
    return free[0]


def main():
    p = argparse.ArgumentParser(prog="replay.py")
    p.add_argument("plan")
    p.add_argument("job")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--schedule", choices=["1f1b", "gpipe"], default="1f1b")
    a = p.parse_args()
    job = [j for j in json.load(open(a.plan))["jobs"] if j["name"] == a.job][0]["pipeline"]
    T = a.time_scale
    stages = [(s["fwd_s"] / T, s["bwd_s"] / T) for s in job["stages"]]
    hops = [(h["latency_s"], h["transfer_s"] / T) for h in job["hops"]]
    print(f"{replay(stages, hops, job['microbatches'], a.schedule):.6f}")


main()
