"""ddp_parts.py: a DDP step over tern and over Gloo, interleaved in the same processes, cut in
parts (tests/python/torchrun_env.py N bench/torch/ddp_parts.py): forward, backward and the
optimizer's step of each, the time tern's backend takes to issue the buckets' all-reduces, and
the end-of-backward wait that Work.get_future queues (backend.py). A third model without DDP
gives the machine's own noise. Every rank prints one line (docs/perf/torch_overhead.md).
"""
import statistics
import time

import torch
import torch.distributed as dist

import tern  # noqa: F401 - registers the backend
import tern.backend as tb

STEPS, REPS = 10, 5
acc = {"settle": 0.0, "issue": 0.0, "calls": 0}


def timed(fn, key):
    def wrapper(*args, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            acc[key] += time.perf_counter() - t0
            acc["calls"] += key == "issue"
    return wrapper


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def trainer(group, ddp=True):
    model = torch.nn.parallel.DistributedDataParallel(mlp(), process_group=group) if ddp else mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
    parts = {"fwd": 0.0, "bwd": 0.0, "opt": 0.0}

    def step():
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        parts["fwd"] += t1 - t0
        parts["bwd"] += t2 - t1
        parts["opt"] += time.perf_counter() - t2
    for _ in range(3):
        step()
    for k in parts:
        parts[k] = 0.0
    return step, parts


def main():
    torch.set_num_threads(1)
    dist.init_process_group("tern")
    gloo = dist.new_group(backend="gloo")
    tb.Work._settle = timed(tb.Work._settle, "settle")
    tb.ProcessGroupTern.allreduce = timed(tb.ProcessGroupTern.allreduce, "issue")
    runs = {"tern": trainer(None), "gloo": trainer(gloo), "local": trainer(None, ddp=False)}
    times = {k: [] for k in runs}
    for _ in range(REPS):
        for k, (step, _) in runs.items():
            dist.barrier()
            if k == "tern":
                acc.update(settle=0.0, issue=0.0, calls=0)
            t0 = time.perf_counter()
            for _ in range(STEPS):
                step()
            times[k].append((time.perf_counter() - t0) / STEPS * 1e3)
            if k == "tern":
                last = dict(acc)
    med = {k: statistics.median(v) for k, v in times.items()}
    per = {k: [round(v / (REPS * STEPS) * 1e3, 1) for v in runs[k][1].values()]
           for k in ("tern", "gloo")}
    print(f"rank {dist.get_rank()}: step tern {med['tern']:.1f} ms, gloo {med['gloo']:.1f}, "
          f"no DDP {med['local']:.1f}, tern / gloo {med['tern'] / med['gloo']:.2f}; a tern step: "
          f"{last['calls'] / STEPS:.1f} all-reduces issued in {last['issue'] / STEPS * 1e3:.2f} ms, "
          f"end-of-backward wait {last['settle'] / STEPS * 1e3:.2f} ms; fwd, bwd, opt ms: "
          f"tern {per['tern']} gloo {per['gloo']}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
