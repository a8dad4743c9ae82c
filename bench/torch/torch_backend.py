"""torch_backend.py: one rank of the torch.distributed benchmark (run.sh starts the ranks with
torchrun's variables). The default group is tern's backend; a Gloo group over the same ranks
(dist.new_group(backend="gloo")) runs beside it, so that both backends are timed in the same
processes, in turns (turns.py: the order reverses every other repetition), and each figure is
the median of 5 repetitions, each the mean over a batch of calls.
Rank 0 prints CSV lines "what,backend,ranks,bytes,us":

  call      dist.all_reduce of 8 floats; "pycall": tern's own Comm.allreduce on the backend's
            communicator; "overhead": call - pycall within each repetition, the median of those
            (overhead.py's measure(), 2000 calls a batch, Gloo's 100)
  ddp_step  one DDP training step (forward, backward with the gradients all-reduced, SGD step)
            of a 4-layer MLP of 1.1 M parameters (4.2 MB of gradients), batch 32 per rank;
            tern: the backend's own allreduce ("ddp_step") and tern.ddp's hook ("ddp_step_hook")
  all_gather_into_tensor, reduce_scatter_tensor at 1 MiB and 16 MiB of output (per rank's
            input for reduce_scatter: size x that); Gloo has neither: its emulation, all_gather
            into a list and a cat, and an all_reduce of the whole input and a slice
  all_to_all_single_splits  all_to_all_single with uneven split sizes (rank r sends rank q
            (r + q) % 3 blocks, some none), 1 MiB and 16 MiB sent per rank on average; both
            backends have it (tern: tern_alltoallv)
"""
import sys

import torch
import torch.distributed as dist

import overhead
import tern  # noqa: F401 - registers the backend
import tern.ddp
import turns

REPS = 5


def interleaved(fns, calls):
    """{name: median over REPS of the mean time of one call, us}, the fns taking turns."""
    times = turns.in_turns(fns, calls, REPS)
    return {name: turns.median(times, name) for name in times}


def emit(n, nbytes, medians):
    if dist.get_rank() == 0:
        for (what, backend), us in medians.items():
            print(f"{what},{backend},{n},{nbytes},{us:.2f}", flush=True)


def calls(n, gloo):
    times = overhead.measure(gloo, 2000, REPS, (overhead.CALL, overhead.PYCALL, overhead.GLOO))
    rows = {("call", "tern"): overhead.CALL, ("pycall", "tern"): overhead.PYCALL,
            ("call", "gloo"): overhead.GLOO}
    medians = {row: turns.median(times, name) for row, name in rows.items()}
    medians["overhead", "tern"] = turns.median_diff(times, overhead.CALL, overhead.PYCALL)
    emit(n, 32, medians)


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def trainer(group, hook):
    model = torch.nn.parallel.DistributedDataParallel(mlp(), process_group=group)
    if hook:
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
    return step


def ddp_steps(n, gloo):
    steps = {("ddp_step", "tern"): trainer(None, False),
             ("ddp_step_hook", "tern"): trainer(None, True),
             ("ddp_step", "gloo"): trainer(gloo, False)}
    nbytes = sum(p.numel() * 4 for p in mlp().parameters())
    emit(n, nbytes, interleaved(steps, 10))


def sharded(n, gloo):
    rank = dist.get_rank()
    for nbytes in (1 << 20, 16 << 20):
        count = nbytes // 4
        shard, whole, big = torch.ones(count), torch.empty(count * n), torch.ones(count * n)
        parts = [torch.empty(count) for _ in range(n)]

        def gloo_gather():
            dist.all_gather(parts, shard, group=gloo)
            torch.cat(parts, out=whole)

        def gloo_scatter():
            tmp = big.clone()
            dist.all_reduce(tmp, group=gloo)
            shard.copy_(tmp.chunk(n)[rank])
        reps = max(2, (64 << 20) // (nbytes * n))
        emit(n, nbytes, interleaved({
            ("all_gather_into_tensor", "tern"): lambda: dist.all_gather_into_tensor(whole, shard),
            ("all_gather_into_tensor", "gloo"): gloo_gather,
            ("reduce_scatter_tensor", "tern"): lambda: dist.reduce_scatter_tensor(shard, big),
            ("reduce_scatter_tensor", "gloo"): gloo_scatter}, reps))


def alltoallv(n, gloo):
    rank = dist.get_rank()
    for nbytes in (1 << 20, 16 << 20):
        row = nbytes // 4 // n  # floats a block: n blocks a rank on average
        send = [(rank + q) % 3 for q in range(n)]
        recv = [(q + rank) % 3 for q in range(n)]
        x, out = torch.ones(sum(send) * row), torch.empty(sum(recv) * row)
        sizes = ([s * row for s in recv], [s * row for s in send])
        reps = max(2, (64 << 20) // (nbytes * n))
        emit(n, nbytes, interleaved({
            ("all_to_all_single_splits", "tern"): lambda: dist.all_to_all_single(out, x, *sizes),
            ("all_to_all_single_splits", "gloo"):
                lambda: dist.all_to_all_single(out, x, *sizes, group=gloo)}, reps))


def main():
    torch.set_num_threads(1)
    dist.init_process_group("tern")
    gloo = dist.new_group(backend="gloo")
    n = dist.get_world_size()
    calls(n, gloo)
    if n > 1 or "all" in sys.argv:
        ddp_steps(n, gloo)
        sharded(n, gloo)
        alltoallv(n, gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
