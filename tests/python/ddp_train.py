"""ddp_train.py: one small model trained by DDP for a fixed number of steps, the same way over
Gloo and over tern, so that the two can be compared parameter by parameter.

    python3 ddp_train.py gloo N OUTDIR   N ranks through torch.multiprocessing, Gloo on
                                         127.0.0.1 (a TCPStore on a port the kernel picks)
    python3 ddp_train.py tern OUTDIR     one rank, under `tern run -n N`: tern.ddp's process
                                         group and communication hook
Every rank writes OUTDIR/<backend>.rank<R>.pt: its final parameters and its losses. The data are
generated from a fixed seed; each step's global batch of BATCH samples is split across the ranks,
rank r taking every N-th sample from r, so the mean gradient DDP computes is the same for any N.
"""
import os
import sys

import torch
import torch.distributed as dist

STEPS = 20
BATCH = 32  # divides by 2 and 4: equal shards, so DDP's mean of means is the global mean


def data():
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(STEPS * BATCH, 20, generator=g)
    y = (x @ torch.randn(20, 4, generator=g)).argmax(1)
    return x, y


def train(model, rank, world, outdir, backend):
    x, y = data()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(STEPS):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        xs, ys = x[batch][rank::world], y[batch][rank::world]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = [p.detach().clone() for p in model.module.parameters()]
    torch.save({"params": params, "losses": losses}, os.path.join(outdir, f"{backend}.rank{rank}.pt"))


def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def gloo_rank(rank, world, port, outdir):
    store = dist.TCPStore("127.0.0.1", port, world, False)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(net())
    train(model, rank, world, outdir, "gloo")
    dist.destroy_process_group()


def main():
    torch.set_num_threads(1)  # ranks share 2 cores; intra-op threads would only fight
    if sys.argv[1] == "gloo":
        world, outdir = int(sys.argv[2]), sys.argv[3]
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # Gloo's pairs on loopback only
        store = dist.TCPStore("127.0.0.1", 0, world + 1, True, wait_for_workers=False)
        # fork, not spawn's default start method: the ranks inherit the imported torch instead of
        # each importing it again (seconds apiece on 2 shared cores); nothing has run threads yet
        torch.multiprocessing.start_processes(gloo_rank, args=(world, store.port, outdir),
                                              nprocs=world, start_method="fork")
        return 0
    import tern
    import tern.ddp
    outdir = sys.argv[2]
    comm = tern.init()
    model = torch.nn.parallel.DistributedDataParallel(net(), process_group=tern.ddp.ProcessGroup(comm))
    model.register_comm_hook(tern.ddp.HookState(comm), tern.ddp.allreduce_hook)
    train(model, comm.rank, comm.size, outdir, "tern")
    comm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
