#!/usr/bin/python3
"""gloo.py: the Gloo side of bench/peers: torch.distributed's gloo backend, timed by the method
of mpi_bench.c (one checked call, w warm-up calls, batches of 1, 4, 16, ... until one lasts
T/5 ms, then R repeats of a barrier and `iters` back-to-back calls, each repeat's time the
maximum over ranks, the median of the R repeats).

Gloo in torch 1.13 has allreduce, allgather and broadcast, not reduce_scatter (the backend
refuses it): that row prints `reduce_scatter BYTES 0 nan nan -1`. allreduce is in place in
torch.distributed: the timed calls run on zeros, which keeps the values bounded. allgather
gathers into views of one tensor. f32 sum; size is the whole buffer, as in tern bench.

Ranks are spawned as torch.multiprocessing processes with a tcp://127.0.0.1 rendezvous and
GLOO_SOCKET_IFNAME=lo; one torch thread per rank, as torchrun sets OMP_NUM_THREADS=1 for
several local ranks. Rank 0 prints `coll bytes iters time_us busbw_gbs wrong` per size.
Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

COLLS = ["allreduce", "reduce_scatter", "allgather", "broadcast"]


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    return 1.0 if coll == "broadcast" else (n - 1) / n


class Coll:
    """The buffers of one (collective, size) and its call."""

    def __init__(self, coll, count, rank, n):
        self.coll, self.count, self.rank, self.n = coll, count, rank, n
        if coll == "allreduce":
            self.buf = torch.zeros(count)
        elif coll == "allgather":
            self.send = torch.zeros(count)
            self.out = torch.zeros(count * n)
            self.views = list(self.out.chunk(n))
        else:
            self.buf = torch.zeros(count)

    def call(self):
        if self.coll == "allreduce":
            dist.all_reduce(self.buf)
        elif self.coll == "allgather":
            dist.all_gather(self.views, self.send)
        else:
            dist.broadcast(self.buf, 0)

    def check(self):
        """One call on known inputs; the number of wrong elements on this rank."""
        r, n = self.rank, self.n
        if self.coll == "allreduce":
            self.buf.fill_(r + 1)
            self.call()
            wrong = int((self.buf != n * (n + 1) / 2).sum())
            self.buf.zero_()
        elif self.coll == "allgather":
            self.send.fill_(r + 1)
            self.out.fill_(-1)
            self.call()
            want = torch.arange(1, n + 1, dtype=torch.float32).repeat_interleave(self.count)
            wrong = int((self.out != want).sum())
        else:
            self.buf.fill_(r + 1)
            self.call()
            wrong = int((self.buf != 1).sum())
        return wrong


def timed(c, iters):
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        c.call()
    t = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0])


def measure(c, a):
    wrong = torch.tensor([c.check()], dtype=torch.int64)
    dist.all_reduce(wrong)
    for _ in range(a.w):
        c.call()
    target = a.T * 1e-3
    k = 1
    while True:
        per_call = timed(c, k)
        if per_call * k >= target / 5 or k >= 100000:
            break
        k *= 4
    iters = max(3, min(100000, int(target / max(per_call, 1e-9))))
    t = statistics.median(timed(c, iters) for _ in range(a.R))
    return iters, t, int(wrong[0])


def worker(rank, a):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank,
                            world_size=a.n)
    if rank == 0:
        print(f"# gloo: {a.n} ranks, f32 sum, T {a.T} ms, R {a.R}, w {a.w}, torch {torch.__version__}",
              flush=True)
    for coll in a.c.split(","):
        for size in (parse_size(s) for s in a.s.split(",")):
            blocks = a.n if coll in ("reduce_scatter", "allgather") else 1
            count = size // 4 // blocks
            shown = count * 4 * blocks
            if count == 0:
                continue
            if coll == "reduce_scatter":
                if rank == 0:
                    print(f"{coll} {shown} 0 nan nan -1", flush=True)
                continue
            iters, t, wrong = measure(Coll(coll, count, rank, a.n), a)
            if rank == 0:
                print(f"{coll} {shown} {iters} {t * 1e6:.4f} "
                      f"{shown / t / 1e9 * bus_factor(coll, a.n):.4f} {wrong}", flush=True)
    dist.barrier()
    if rank == 0:
        print("# done", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2)
    p.add_argument("-s", default="8,1K,64K,1M,16M", help="sizes, whole buffer (K, M suffixes)")
    p.add_argument("-c", default=",".join(COLLS))
    p.add_argument("-T", type=float, default=20, help="ms per repeat")
    p.add_argument("-R", type=int, default=5)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("--port", type=int, default=29500 + os.getpid() % 20000)
    a = p.parse_args()
    for coll in a.c.split(","):
        if coll not in COLLS:
            sys.exit(f"gloo.py: no collective {coll!r}")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(worker, args=(a,), nprocs=a.n)


if __name__ == "__main__":
    main()
