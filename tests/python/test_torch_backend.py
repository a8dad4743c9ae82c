"""test_torch_backend.py INIT: the "tern" backend through torch.distributed's public API only.

    torchrun_env.py N test_torch_backend.py env            init_method env:// (torchrun's variables)
    torchrun_env.py N test_torch_backend.py tcp            tcp://MASTER_ADDR:MASTER_PORT
    torchrun_env.py N test_torch_backend.py file:DIR       file://DIR/init

Every collective with every reduce op tern has and every dtype, point to point, a subgroup,
async work, a short DDP run against a single-process reference, and a ZeRO-1 style sharded
optimizer step (reduce_scatter_tensor + all_gather_into_tensor) equal to DDP's to 1e-6. Each
check runs on every rank in the same order; the first failure prints its traceback and exits 1.
"N passed, 0 failed" closes a good run.
"""
import os
import sys
import traceback

import torch
import torch.distributed as dist

import tern

checks = []
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64]


def check(fn):
    checks.append(fn)
    return fn


def values(r, n, dtype):
    """Rank r's input: distinct per rank and element, exact in every dtype."""
    return (torch.arange(n) % 5 + 2 * r + 1).to(dtype)


def expect_raises(kind, fn, needle):
    try:
        fn()
    except kind as e:
        assert needle in str(e), f"{kind.__name__} '{e}' does not say '{needle}'"
        return
    raise AssertionError(f"no {kind.__name__} raised")


@check
def all_reduce_every_op_and_dtype(r, n):
    ops = [(dist.ReduceOp.SUM, lambda s: s.sum(0)), (dist.ReduceOp.PRODUCT, lambda s: s.prod(0)),
           (dist.ReduceOp.MIN, lambda s: s.min(0).values),
           (dist.ReduceOp.MAX, lambda s: s.max(0).values)]
    for dtype in DTYPES:
        stack = torch.stack([values(q, 7, dtype) for q in range(n)])
        for op, ref in ops:
            x = values(r, 7, dtype)
            dist.all_reduce(x, op=op)
            want = ref(stack.to(torch.float64)).to(dtype)
            assert torch.equal(x, want), f"{dtype} {op}: {x} != {want}"
    x = values(r, 6, torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    assert torch.allclose(x, sum(values(q, 6, torch.float64) for q in range(n)) / n)
    expect_raises(ValueError, lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32),
                                                      op=dist.ReduceOp.BAND), "BAND")
    expect_raises(TypeError, lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "int16")
    expect_raises(ValueError, lambda: dist.all_reduce(torch.ones(4, 4).t()), "contiguous")


@check
def broadcast_every_root_and_dtype(r, n):
    for dtype in DTYPES + [torch.bool, torch.complex64, torch.int16]:
        for root in range(n):
            x = values(r, 9, torch.int64).to(dtype)
            dist.broadcast(x, src=root)
            assert torch.equal(x, values(root, 9, torch.int64).to(dtype)), f"{dtype} root {root}"


@check
def reduce_to_every_root(r, n):
    for root in range(n):
        x = values(r, 10, torch.float32)
        dist.reduce(x, dst=root, op=dist.ReduceOp.SUM)
        if r == root:
            assert torch.equal(x, sum(values(q, 10, torch.float32) for q in range(n)))


@check
def all_gather_list_and_into_tensor(r, n):
    for dtype in DTYPES:
        outs = [torch.empty(5, dtype=dtype) for _ in range(n)]
        dist.all_gather(outs, values(r, 5, dtype))
        for q in range(n):
            assert torch.equal(outs[q], values(q, 5, dtype))
        big = torch.empty(n * 5, dtype=dtype)
        dist.all_gather_into_tensor(big, values(r, 5, dtype))
        assert torch.equal(big, torch.cat([values(q, 5, dtype) for q in range(n)]))
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r})
    assert objs == [{"rank": q} for q in range(n)]


@check
def reduce_scatter_list_and_tensor(r, n):
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        ins = [values(r, 4, dtype) + q for q in range(n)]
        out = torch.empty(4, dtype=dtype)
        dist.reduce_scatter(out, ins)
        assert torch.equal(out, sum(values(q, 4, dtype) + r for q in range(n)).to(dtype))
        flat = torch.cat([values(r, 4, dtype) + q for q in range(n)])
        out2 = torch.empty(4, dtype=dtype)
        dist.reduce_scatter_tensor(out2, flat, op=dist.ReduceOp.MAX)
        assert torch.equal(out2, values(n - 1, 4, dtype) + r)


@check
def gather_and_scatter_every_root(r, n):
    for root in range(n):
        x = values(r, 3, torch.int32)
        outs = [torch.empty(3, dtype=torch.int32) for _ in range(n)] if r == root else None
        dist.gather(x, gather_list=outs, dst=root)
        if r == root:
            for q in range(n):
                assert torch.equal(outs[q], values(q, 3, torch.int32))
        ins = [values(q, 3, torch.float64) * 7 for q in range(n)] if r == root else None
        y = torch.empty(3, dtype=torch.float64)
        dist.scatter(y, scatter_list=ins, src=root)
        assert torch.equal(y, values(r, 3, torch.float64) * 7)


@check
def all_to_all_even_and_split(r, n):
    x = torch.arange(n * 2) + 100 * r
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x)
    assert torch.equal(out, torch.cat([torch.arange(2) + 2 * r + 100 * q for q in range(n)]))
    # rank r sends q + 1 rows of 2 to rank q, so receives r + 1 rows from each
    ins = torch.cat([torch.full((q + 1, 2), 10 * r + q, dtype=torch.float32) for q in range(n)])
    out = torch.empty((n * (r + 1), 2))
    dist.all_to_all_single(out, ins, output_split_sizes=[r + 1] * n,
                           input_split_sizes=[q + 1 for q in range(n)])
    want = torch.cat([torch.full((r + 1, 2), 10 * q + r, dtype=torch.float32) for q in range(n)])
    assert torch.equal(out, want), f"{out} != {want}"
    outs = [torch.empty(q + 1, dtype=torch.int64) for q in range(n)]  # q + 1 from rank q
    dist.all_to_all(outs, [torch.full((r + 1,), 10 * r + q) for q in range(n)])
    for q in range(n):
        assert torch.equal(outs[q], torch.full((q + 1,), 10 * q + r))


@check
def all_to_all_uneven_matches_gloo(r, n):
    """Split sizes drawn alike on every rank, a third of them zero (and one rank's whole row),
    in three dtypes, out of place and in place: tern's alltoallv equals Gloo's all_to_all_single
    on the same ranks."""
    gloo = dist.new_group(backend="gloo")
    g = torch.Generator().manual_seed(1234)
    for trial in range(4):
        splits = torch.randint(0, 3, (n, n), generator=g) * torch.randint(0, 3, (n, n), generator=g)
        if trial == 3:
            splits = splits + splits.T  # symmetric: in place fits every rank
        if trial == 1:
            splits[n - 1] = 0  # the last rank sends nothing at all
        send, recv = splits[r].tolist(), splits[:, r].tolist()
        for dtype in (torch.float32, torch.int64, torch.int8):  # Gloo has no bfloat16 here
            x = (torch.arange(sum(send) * 3).reshape(-1, 3) + 1000 * r + trial).to(dtype)
            got, want = torch.empty(sum(recv), 3, dtype=dtype), torch.empty(sum(recv), 3, dtype=dtype)
            dist.all_to_all_single(got, x, recv, send)
            dist.all_to_all_single(want, x, recv, send, group=gloo)
            assert torch.equal(got, want), f"trial {trial} {dtype}: {got} != {want}"
        if torch.equal(splits.sum(0), splits.sum(1)):  # in place, where every rank can
            y = torch.arange(sum(send) * 2, dtype=torch.float64).reshape(-1, 2) + 100 * r
            want = torch.empty_like(y)
            dist.all_to_all_single(want, y, recv, send, group=gloo)
            dist.all_to_all_single(y, y, recv, send)
            assert torch.equal(y, want), f"in place trial {trial}: {y} != {want}"
    dist.destroy_process_group(gloo)


@check
def point_to_point_ring(r, n):
    right, left = (r + 1) % n, (r - 1) % n
    got = torch.empty(4, dtype=torch.float16)
    reqs = [dist.isend(values(r, 4, torch.float16), right), dist.irecv(got, left)]
    for q in reqs:
        q.wait()
    assert torch.equal(got, values(left, 4, torch.float16))
    if r == 0:
        dist.send(torch.tensor([42.0]), 1)
    elif r == 1:
        y = torch.zeros(1)
        assert dist.recv(y, src=0) == 0 and y.item() == 42.0
    ops = [dist.P2POp(dist.isend, values(r, 3, torch.int64), right),
           dist.P2POp(dist.irecv, got3 := torch.empty(3, dtype=torch.int64), left)]
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    assert torch.equal(got3, values(left, 3, torch.int64))



@check
def recv_from_any_source(r, n):
    """Every other rank sends the last rank two tensors; it takes them with recv and irecv
    without a source: each once, each sender's in order, the source named."""
    last = n - 1
    if r != last:
        for k in range(2):
            dist.send(torch.full((6,), float(10 * r + k)), last)
    else:
        seen = {q: [] for q in range(last)}
        for m in range(2 * last):
            z = torch.zeros(6)
            if m % 2:
                src = dist.recv(z)
            else:
                work = dist.irecv(z)
                work.wait()
                src = work._source_rank()
            assert (z == z[0]).all() and int(z[0]) // 10 == src, (src, z)
            seen[src].append(int(z[0]) % 10)
        assert all(v == [0, 1] for v in seen.values()), seen
    dist.barrier()


@check
def async_work(r, n):
    x = values(r, 1 << 16, torch.float32)
    works = [dist.all_reduce(x, async_op=True), dist.broadcast(torch.ones(3), 0, async_op=True)]
    for w in works:
        assert w.wait() is True
        assert w.is_completed() and w.is_success() and w.exception() is None
    assert torch.equal(x, sum(values(q, 1 << 16, torch.float32) for q in range(n)))
    w = dist.barrier(async_op=True)
    while not w.is_completed():
        pass
    fut = dist.all_reduce(torch.ones(2), async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.full((2,), float(n)))


@check
def subgroups(r, n):
    evens = dist.new_group([q for q in range(n) if q % 2 == 0])
    pair = dist.new_group([n - 1, 0])  # ranks listed out of order: group rank follows the list
    x = torch.full((3,), float(r))
    if r % 2 == 0:
        dist.all_reduce(x, group=evens)
        assert x[0].item() == sum(q for q in range(n) if q % 2 == 0)
        assert dist.get_world_size(evens) == (n + 1) // 2
    y = torch.full((2,), float(r))
    if r in (0, n - 1):
        dist.broadcast(y, src=n - 1, group=pair)
        assert y[0].item() == n - 1
        outs = [torch.empty(1) for _ in range(2)]
        dist.all_gather(outs, torch.tensor([float(r)]), group=pair)
        assert [o.item() for o in outs] == [0.0, n - 1.0]
    dist.barrier()


def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def batches(steps, batch):
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(batch, 8, generator=g), torch.randint(0, 3, (batch,), generator=g))
            for _ in range(steps)]


@check
def ddp_equals_one_process(r, n):
    """DDP over tern (no hook: the backend's own allreduce) against one process on the whole
    batch: the mean of the ranks' mean gradients is the whole batch's mean."""
    data = batches(5, 4 * n)
    model = torch.nn.parallel.DistributedDataParallel(net())
    ref = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for x, y in data:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x[r::n]), y[r::n]).backward()
        opt.step()
        ref_opt.zero_grad()
        sum(torch.nn.functional.cross_entropy(ref(x[q::n]), y[q::n]) for q in range(n)).div(n).backward()
        ref_opt.step()
    for p, q in zip(model.module.parameters(), ref.parameters()):
        assert (p - q).abs().max().item() <= 1e-6 * q.abs().max().item() + 1e-7


@check
def zero1_sharded_step_equals_ddp(r, n):
    """ZeRO-1: each rank keeps the optimizer state of its shard of the flat parameters; the
    gradient is reduce-scattered, the shard stepped, the parameters all-gathered."""
    data = batches(5, 4 * n)
    ddp = torch.nn.parallel.DistributedDataParallel(net())
    ddp_opt = torch.optim.Adam(ddp.parameters(), lr=0.01)
    model = net()
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    shard = -(-total // n)
    flat = torch.zeros(shard * n)
    flat[:total] = torch.cat([p.detach().reshape(-1) for p in params])
    mine = flat[r * shard:(r + 1) * shard].clone().requires_grad_()
    opt = torch.optim.Adam([mine], lr=0.01)
    for x, y in data:
        ddp_opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x[r::n]), y[r::n]).backward()
        ddp_opt.step()
        for p in params:
            p.grad = None
        torch.nn.functional.cross_entropy(model(x[r::n]), y[r::n]).backward()
        grads = torch.zeros(shard * n)
        grads[:total] = torch.cat([p.grad.reshape(-1) for p in params])
        g = torch.empty(shard)
        dist.reduce_scatter_tensor(g, grads, op=dist.ReduceOp.AVG)
        mine.grad = g
        opt.step()
        dist.all_gather_into_tensor(flat, mine.detach())
        with torch.no_grad():
            for p, piece in zip(params, flat[:total].split([p.numel() for p in params])):
                p.copy_(piece.view_as(p))
    for p, q in zip(ddp.module.parameters(), params):
        diff = (p - q).abs().max().item()
        assert diff <= 1e-6, f"ZeRO-1 differs from DDP by {diff}"


def init(how):
    if how == "env":
        dist.init_process_group("tern")
    elif how == "tcp":
        dist.init_process_group("tern", init_method=f"tcp://{os.environ['MASTER_ADDR']}:"
                                f"{os.environ['MASTER_PORT']}", rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group("tern", init_method=f"file://{how[5:]}/init",
                                rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    assert dist.get_backend() == "tern", dist.get_backend()


def main():
    torch.set_num_threads(1)
    init(sys.argv[1])
    r, n = dist.get_rank(), dist.get_world_size()
    passed = 0
    for fn in checks:
        if os.environ.get("VERBOSE"):
            print(f"rank {r}: {fn.__name__}", flush=True)
        try:
            fn(r, n)
        except Exception:
            print(f"rank {r}: FAIL {fn.__name__}", flush=True)
            traceback.print_exc()
            return 1
        passed += 1
    dist.destroy_process_group()
    if r == 0:
        print(f"{passed} passed, 0 failed (init {sys.argv[1]}, {n} ranks)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
