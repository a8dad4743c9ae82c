"""overhead.py [CALLS [REPS [PIECE...]]]: where the time of a small dist.all_reduce goes, piece by
piece, at the rank count torchrun_env.py starts (tests/python/torchrun_env.py N
bench/torch/overhead.py). Each line adds one piece of the backend's path to the bare C call; all
(or the PIECEs named) are timed in turns with each other and with Gloo in the same processes
(turns.py: REPS repetitions, default 7, of CALLS calls of 8 floats, default 2000; Gloo's batch
is a twentieth). run.sh's torch_backend.py times its "call" and "pycall" rows with measure()
here, on the same pieces.

  C iallreduce+wait   tern_iallreduce + tern_wait through ctypes: the floor of a nonblocking call
  + dist.Work()       ... and a dist.Work subclass made (pybind's trampoline), as every call must
  + hash(reduceOp)    ... and the op read from torch's AllreduceOptions (a pybind getter)
  + _HandleWork       ... and the backend's own Work (dist.Work plus its bookkeeping)
  C blocking          tern_allreduce through ctypes (one call, no request)
  Comm.allreduce      tern's own Python call (blocking)
  pg.allreduce+wait   the backend's allreduce and its Work's wait, called directly
  dist.all_reduce     torch's function over the backend: what a user's call costs
  gloo                torch's function over a Gloo group of the same ranks
Rank 0 prints, for each piece, the median wall-clock time of a call and the median CPU time it
took the rank (all its threads: spinning and yielding waits count), then the overhead as the
issue defines it, dist.all_reduce less Comm.allreduce, as the median of the differences within
each repetition (wall and CPU). docs/perf/torch_overhead.md reads them.
"""
import ctypes
import sys

import torch
import torch.distributed as dist

import tern
import tern.backend as tb
import turns

CALL, PYCALL, GLOO = "dist.all_reduce", "Comm.allreduce", "gloo"


class _W(dist.Work):
    def __init__(self):
        dist.Work.__init__(self)


def pieces(x, gloo):
    """{name: a callable making one call of that piece} over the default group and gloo."""
    p, n = x.data_ptr(), x.numel()
    pg = dist.distributed_c10d._get_default_group()
    comm, opts = pg.comm, dist.AllreduceOptions()
    out = ctypes.c_void_p()
    ref, h = ctypes.byref(out), comm._h

    def c_nb():
        tb._tern_iallreduce(h, p, p, n, 0, 0, ref)
        tb._tern_wait(out.value)

    def with_work():
        tb._tern_iallreduce(h, p, p, n, 0, 0, ref)
        _W()
        tb._tern_wait(out.value)

    def with_op():
        hash(opts.reduceOp)
        c_nb()

    def with_handle():
        comm._pending.pop(id(tb._HandleWork(comm, None, [x])))
        c_nb()

    return {"C iallreduce+wait": c_nb, "+ dist.Work()": with_work, "+ hash(reduceOp)": with_op,
            "+ _HandleWork": with_handle,
            "C blocking": lambda: tern._lib.lib.tern_allreduce(h, p, p, n, 0, 0),
            PYCALL: lambda: comm.allreduce(x),
            "pg.allreduce+wait": lambda: pg.allreduce([x], opts).wait(),
            CALL: lambda: dist.all_reduce(x),
            GLOO: lambda: dist.all_reduce(x, group=gloo)}


def measure(gloo, calls, reps, names=None):
    """turns.in_turns over the pieces named (all by default) on 8 floats."""
    x = torch.ones(8)  # held here: the C pieces keep only its address
    fns = pieces(x, gloo)
    fns = {k: fns[k] for k in names} if names else fns
    batch = {k: max(50, calls // 20) if k == GLOO else calls for k in fns}  # Gloo is slow
    return turns.in_turns(fns, batch, reps)


def main():
    torch.set_num_threads(1)
    dist.init_process_group("tern")
    gloo = dist.new_group(backend="gloo")
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    times = measure(gloo, calls, reps, sys.argv[3:])
    if dist.get_rank() == 0:
        n = dist.get_world_size()
        for k in times:
            wall, cpu = turns.median(times, k), turns.median(times, k, 1)
            print(f"n={n} {k:20s} {wall:9.1f} us  cpu {cpu:8.1f} us", flush=True)
        if CALL in times and PYCALL in times:
            print(f"n={n} overhead ({CALL} - {PYCALL}) {turns.median_diff(times, CALL, PYCALL):+.1f} us"
                  f"  cpu {turns.median_diff(times, CALL, PYCALL, 1):+.1f} us", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
