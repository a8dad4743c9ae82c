"""torch_backend.py BACKEND: one rank of the torch.distributed benchmark (run.sh starts the ranks
with torchrun's variables). Rank 0 prints CSV lines "what,backend,ranks,bytes,us" with the median
of 5 repetitions, each the mean over a batch of calls:

  call      dist.all_reduce of 8 floats (tern: also "pycall", tern's own Comm.allreduce on the
            same communicator, interleaved with it: the backend's overhead is call - pycall)
  ddp_step  one DDP training step (forward, backward with the gradients all-reduced, SGD step)
            of a 4-layer MLP of 1.1 M parameters (4.2 MB of gradients), batch 32 per rank;
            tern: the backend's own allreduce ("ddp_step") and tern.ddp's hook ("ddp_step_hook")
  all_gather_into_tensor, reduce_scatter_tensor at 1 MiB and 16 MiB of output (per rank's
            input for reduce_scatter: size x that); Gloo has neither: its emulation, all_gather
            into a list and a cat, and an all_reduce of the whole input and a slice
"""
import statistics
import sys
import time

import torch
import torch.distributed as dist

REPS = 5


def median_us(fn, calls):
    times = []
    for _ in range(REPS):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def emit(what, backend, n, nbytes, us):
    if dist.get_rank() == 0:
        print(f"{what},{backend},{n},{nbytes},{us:.2f}", flush=True)


def calls(backend, n):
    x = torch.ones(8)
    if backend == "tern":
        comm = dist.distributed_c10d._get_default_group().comm
        for _ in range(2):  # interleaved: the two see the same machine
            emit("call", backend, n, 32, median_us(lambda: dist.all_reduce(x), 2000))
            emit("pycall", backend, n, 32, median_us(lambda: comm.allreduce(x), 2000))
    else:
        emit("call", backend, n, 32, median_us(lambda: dist.all_reduce(x), 2000))


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def ddp_steps(backend, n, hook):
    model = torch.nn.parallel.DistributedDataParallel(mlp())
    if hook:
        import tern.ddp
        comm = dist.distributed_c10d._get_default_group().comm
        model.register_comm_hook(tern.ddp.HookState(comm), tern.ddp.allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    nbytes = sum(p.numel() * 4 for p in model.parameters())
    emit("ddp_step_hook" if hook else "ddp_step", backend, n, nbytes, median_us(step, 20))


def sharded(backend, n):
    for nbytes in (1 << 20, 16 << 20):
        count = nbytes // 4
        shard, whole = torch.ones(count), torch.empty(count * n)
        big = torch.ones(count * n)
        if backend == "tern":
            gather = lambda: dist.all_gather_into_tensor(whole, shard)  # noqa: E731
            scatter = lambda: dist.reduce_scatter_tensor(shard, big)  # noqa: E731
        else:
            parts = [torch.empty(count) for _ in range(n)]

            def gather():
                dist.all_gather(parts, shard)
                torch.cat(parts, out=whole)

            def scatter():
                tmp = big.clone()
                dist.all_reduce(tmp)
                shard.copy_(tmp.chunk(n)[dist.get_rank()])
        reps = max(2, (64 << 20) // (nbytes * n))
        emit("all_gather_into_tensor", backend, n, nbytes, median_us(gather, reps))
        emit("reduce_scatter_tensor", backend, n, nbytes, median_us(scatter, reps))


def main():
    backend = sys.argv[1]
    torch.set_num_threads(1)
    if backend == "tern":
        import tern  # noqa: F401 - registers the backend
    dist.init_process_group(backend)
    n = dist.get_world_size()
    calls(backend, n)
    ddp_steps(backend, n, False)
    if backend == "tern":
        ddp_steps(backend, n, True)
    sharded(backend, n)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
