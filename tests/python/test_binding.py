"""test_binding.py: tern's Python binding (python/tern), on numpy arrays and CPU torch tensors.

    tern run -n N -- python3 test_binding.py ranks    every collective, blocking and not, checked
                                                      element for element; argument errors;
                                                      tern's own errors as TernError; last, ranks
                                                      that disagree on a count all raise TernError
    python3 test_binding.py alone                     joining fails with TernError carrying
                                                      tern's message: no launch environment; a
                                                      store nobody serves (TERN_TIMEOUT=1)
Each check runs on every rank in the same order (they are collectives); the first failure prints
its traceback and exits 1, which ends the other ranks through `tern run`. "N passed, 0 failed"
closes a good run.
"""
import os
import socket
import sys
import time
import traceback

import numpy as np
import torch

import tern

checks = []


def check(fn):
    checks.append(fn)
    return fn


def expect_raises(kind, fn, needle=""):
    try:
        fn()
    except kind as e:
        assert needle in str(e), f"{kind.__name__} '{e}' does not say '{needle}'"
        return e
    raise AssertionError(f"no {kind.__name__} raised")


def rank_values(comm, r, n, dtype):
    """Rank r's input: distinct per rank and element, exact in every dtype tested."""
    return (np.arange(n) % 7 + 3 * r + 1).astype(dtype)


# ---- ranks ---------------------------------------------------------------------------------

@check
def allreduce_numpy_every_op(comm):
    n, size = 1000, comm.size
    for dtype in (np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64):
        inputs = [rank_values(comm, r, n, dtype) for r in range(size)]
        for op, ref in ((tern.SUM, np.sum), (tern.MAX, np.max), (tern.MIN, np.min)):
            x = inputs[comm.rank].copy()
            assert comm.allreduce(x, op=op) is x  # in place
            want = ref(np.stack(inputs), axis=0).astype(dtype)
            assert np.array_equal(x, want), f"{np.dtype(dtype).name} op {op}"
    x = rank_values(comm, comm.rank, n, np.float32)
    out = np.empty_like(x)
    comm.allreduce(x, op="avg", out=out)
    want = np.mean(np.stack([rank_values(comm, r, n, np.float32) for r in range(size)]), axis=0)
    assert np.allclose(out, want, rtol=1e-6) and np.array_equal(x, rank_values(comm, comm.rank, n, np.float32))


@check
def allreduce_torch_tensors(comm):
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int64):
        x = torch.arange(300, dtype=torch.float32).remainder(5).add(comm.rank).to(dtype)
        want = sum(torch.arange(300, dtype=torch.float32).remainder(5).add(r) for r in range(comm.size))
        comm.allreduce(x)
        assert torch.equal(x, want.to(dtype)), str(dtype)
    x = torch.ones(4, 6)[:, 1:3]  # a view: not contiguous
    expect_raises(ValueError, lambda: comm.allreduce(x), "contiguous")


@check
def reduce_scatter_allgather_broadcast(comm):
    size, k = comm.size, 17
    x = np.arange(size * k, dtype=np.float32) + comm.rank
    mine = comm.reduce_scatter(x)
    full = sum(np.arange(size * k, dtype=np.float32) + r for r in range(size))
    assert np.array_equal(mine, full[comm.rank * k:(comm.rank + 1) * k])
    gathered = comm.allgather(torch.full((k,), float(comm.rank)))
    assert torch.equal(gathered, torch.arange(size).repeat_interleave(k).float())
    b = np.full(9, comm.rank, dtype=np.int32)
    comm.broadcast(b, root=size - 1)
    assert (b == size - 1).all()
    comm.barrier()


@check
def nonblocking_with_wait_and_test(comm):
    a = np.full(100000, comm.rank + 1.0, dtype=np.float64)
    b = torch.full((1000,), comm.rank + 1.0)
    r1 = comm.iallreduce(a)
    r2 = comm.ibroadcast(b, root=0)
    r3 = comm.iallgather(np.array([comm.rank], dtype=np.int64))
    r4 = comm.ibarrier()
    deadline = time.monotonic() + 20
    while not r2.test():
        assert time.monotonic() < deadline, "ibroadcast never completed"
        time.sleep(0.001)
    assert r1.wait() is a and (a == comm.size * (comm.size + 1) / 2).all()
    assert torch.equal(r2.wait(), torch.ones(1000))
    assert r3.wait().tolist() == list(range(comm.size))
    assert r4.wait() is None
    rs = comm.ireduce_scatter(np.ones(comm.size * 3, dtype=np.float32), op=tern.AVG)
    assert (rs.wait() == 1).all()


@check
def reduce_alltoall_send_recv_and_split(comm):
    n, r = comm.size, comm.rank
    x = np.full(4, r + 1, dtype=np.int64)
    comm.reduce(x, op=tern.SUM, root=n - 1)
    if r == n - 1:
        assert (x == n * (n + 1) // 2).all()
    got = comm.alltoall(np.arange(2 * n, dtype=np.float32) + 100 * r)
    want = np.concatenate([np.arange(2 * r, 2 * r + 2, dtype=np.float32) + 100 * q for q in range(n)])
    assert np.array_equal(got, want)
    # alltoallv: rank i sends rank j (i + 2 j) % 3 elements, zero for a third of the pairs
    cnt = [[(i + 2 * j) % 3 for j in range(n)] for i in range(n)]
    x = np.concatenate([np.full(cnt[r][j], 10 * r + j, np.int32) for j in range(n)])
    got = comm.alltoallv(x, cnt[r], [cnt[i][r] for i in range(n)])
    want = np.concatenate([np.full(cnt[i][r], 10 * i + r, np.int32) for i in range(n)])
    assert np.array_equal(got, want), f"{got} != {want}"
    # the same with the blocks placed in reverse order, a gap of one after each, nonblocking
    sd = [sum(cnt[r][j + 1:]) + (n - 1 - j) for j in range(n)]
    rd = [sum(cnt[i][r] for i in range(q)) + q for q in range(n)]
    xs = np.full(sum(cnt[r]) + n, -1, np.int32)
    for j in range(n):
        xs[sd[j]:sd[j] + cnt[r][j]] = 10 * r + j
    out = np.full(sum(cnt[i][r] for i in range(n)) + n, -7, np.int32)
    comm.ialltoallv(xs, cnt[r], [cnt[i][r] for i in range(n)], out, sd, rd).wait()
    for q in range(n):
        assert (out[rd[q]:rd[q] + cnt[q][r]] == 10 * q + r).all() and out[rd[q] + cnt[q][r]] == -7
    right, left = (r + 1) % n, (r - 1) % n
    inbox = torch.empty(3)
    reqs = [comm.isend(torch.full((3,), float(r)), right), comm.irecv(inbox, left)]
    for q in reqs:
        q.wait()
    assert (inbox == left).all()
    child = comm.split(r % 2, key=-r)  # reversed: the highest rank of a parity is child rank 0
    assert child.size == len(range(r % 2, n, 2))
    assert child.rank == len(range(r + 2, n, 2))
    assert child.allreduce(np.array([r], np.int32))[0] == sum(range(r % 2, n, 2))
    child.close()
    other = comm.split(None if r == 0 else 1)  # rank 0 takes no part (TERN_SPLIT_UNDEFINED)
    assert (other is None) == (r == 0) and (other is None or other.size == n - 1)
    if other is not None:
        other.close()


@check
def gather_and_scatter(comm):
    n, r = comm.size, comm.rank
    for root in range(n):
        got = comm.gather(np.full(3, 10 * r + root, np.int64), root=root)
        if r == root:
            assert np.array_equal(got, np.repeat(np.arange(n) * 10 + root, 3)), got
        else:
            assert got is None
        x = torch.arange(2 * n, dtype=torch.float64) + root if r == root else None
        out = comm.iscatter(x, torch.empty(2, dtype=torch.float64), root=root).wait()
        assert out.tolist() == [2 * r + root, 2 * r + 1 + root], out
    if r == 0:
        expect_raises(ValueError, lambda: comm.gather(np.zeros(2, np.float32),
                                                      out=np.zeros(2 * n + 1, np.float32)))
    comm.barrier()


@check
def recv_from_any_source(comm):
    """Every other rank sends rank 0 three messages, the first late (rank 0 is asleep in its
    wait when it comes); rank 0 takes them from any source: each arrives once, each peer's in
    order, the source named. A receive posted to a peer keeps that peer's message from an
    any-source receive posted after it."""
    n, r = comm.size, comm.rank
    if r != 0:
        time.sleep(0.2)
        for k in range(3):
            comm.send(np.full(5, 10 * r + k, np.int32), 0)
    else:
        seen = {q: [] for q in range(1, n)}
        for k in range(3 * (n - 1)):
            x = np.empty(5, np.int32)
            if k % 2:
                src = comm.recv_any(x)
            else:
                src = comm.irecv_any(x).wait()
            assert (x == x[0]).all() and x[0] // 10 == src, (src, x)
            seen[src].append(int(x[0]) % 10)
        assert all(v == [0, 1, 2] for v in seen.values()), seen
    comm.barrier()
    if n < 3:
        return
    if r == 0:
        mine, anyone = torch.empty(2), torch.empty(2)
        reqs = [comm.irecv(mine, 1), comm.irecv_any(anyone)]
        assert reqs[1].wait() == 2 and reqs[0].wait() is mine
        assert (mine == 1).all() and (anyone == 2).all()
    elif r in (1, 2):
        comm.send(torch.full((2,), float(r)), 0)
    comm.barrier()


@check
def bad_arguments_raise_before_sending(comm):
    expect_raises(TypeError, lambda: comm.allreduce([1.0, 2.0]), "numpy array or a torch tensor")
    expect_raises(TypeError, lambda: comm.allreduce(np.zeros(3, dtype=np.complex64)), "complex64")
    expect_raises(ValueError, lambda: comm.allreduce(np.zeros(4, np.float32), out=np.zeros(5, np.float32)), "4 elements")
    expect_raises(ValueError, lambda: comm.allreduce(np.zeros(4, np.float32), op="mean"), "op 'mean'")
    expect_raises(ValueError, lambda: comm.reduce_scatter(np.zeros(comm.size * 2 + 1, np.float32)), "multiple")
    expect_raises(ValueError, lambda: comm.allgather(np.zeros(2, np.float32), out=np.zeros(1, np.float32)))
    expect_raises(ValueError, lambda: comm.allreduce(np.zeros((3, 4), np.float32)[:, ::2]), "C-contiguous")


@check
def tern_refusals_are_tern_errors(comm):
    e = expect_raises(tern.TernError, lambda: comm.broadcast(np.zeros(3, np.float32), root=comm.size),
                      "TERN_ERR_INVALID_ARG")
    assert e.status == 1 and e.status_name == "TERN_ERR_INVALID_ARG"
    assert "root" in e.detail, f"tern's message '{e.detail}' does not name the root"
    x = np.ones(5, np.float32)
    comm.allreduce(x)  # an argument refused is not a broken communicator
    assert (x == comm.size).all()


@check
def ranks_that_disagree_all_raise(comm):
    x = np.ones(10 + (comm.rank == 0), dtype=np.float32)
    e = expect_raises(tern.TernError, lambda: comm.allreduce(x))
    assert e.detail, "TernError without tern's message"
    again = expect_raises(tern.TernError, lambda: comm.barrier())  # broken for good
    assert again.status == e.status


def run_ranks():
    comm = tern.init()
    passed = 0
    for fn in checks:
        try:
            fn(comm)
        except Exception:
            print(f"FAIL rank {comm.rank}: {fn.__name__}", flush=True)
            traceback.print_exc()
            print(f"{passed} passed, 1 failed")
            return 1
        passed += 1
    comm.close()
    if comm.rank == 0:
        print(f"test_binding: {len(checks)} checks on {comm.size} ranks", flush=True)
    print(f"{passed} passed, 0 failed")
    return 0


# ---- alone ---------------------------------------------------------------------------------

def run_alone():
    for var in [v for v in os.environ if v.startswith(("TERN_RANK", "TERN_WORLD", "TERN_STORE",
                                                        "RANK", "WORLD_SIZE", "OMPI_", "PMI_",
                                                        "SLURM_"))]:
        del os.environ[var]
    os.environ["TERN_TIMEOUT"] = "1"
    e = expect_raises(tern.TernError, tern.init)
    assert e.detail and e.status != 0, f"no message from tern: {e}"
    print(f"no environment: {e}")
    with socket.socket() as s:  # a port nobody serves: bound here, never listened on
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
        t0 = time.monotonic()
        e = expect_raises(tern.TernError, lambda: tern.Comm(1, 2, addr))
        assert time.monotonic() - t0 < 10, "joining took far past TERN_TIMEOUT"
    assert addr in str(e) or "store" in str(e), f"the message does not say what failed: {e}"
    print(f"no store: {e}")
    assert os.path.exists(tern.library_path) and tern.version().count(".") == 2
    print("2 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(run_ranks() if sys.argv[1:] == ["ranks"] else run_alone())
