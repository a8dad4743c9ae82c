"""overhead.py [CALLS]: where the time of a small dist.all_reduce goes, piece by piece, at the
rank count torchrun_env.py starts (tests/python/torchrun_env.py N bench/torch/overhead.py).
Each line adds one piece of the backend's path to the bare C call and is timed in turns with the
others and with Gloo in the same processes (7 repetitions of CALLS calls of 8 floats, median):

  C iallreduce+wait   tern_iallreduce + tern_wait through ctypes: the floor of a nonblocking call
  + dist.Work()       ... and a dist.Work subclass made (pybind's trampoline), as every call must
  + hash(reduceOp)    ... and the op read from torch's AllreduceOptions (a pybind getter)
  + _HandleWork       ... and the backend's own Work (dist.Work plus its bookkeeping)
  C blocking          tern_allreduce through ctypes (one call, no request)
  Comm.allreduce      tern's own Python call (blocking)
  pg.allreduce+wait   the backend's allreduce and its Work's wait, called directly
  dist.all_reduce     torch's function over the backend: what a user's call costs
  gloo                torch's function over a Gloo group of the same ranks
Rank 0 prints one line per piece; docs/perf/torch_overhead.md reads them.
"""
import ctypes
import statistics
import sys
import time

import torch
import torch.distributed as dist

import tern
import tern.backend as tb


class _W(dist.Work):
    def __init__(self):
        dist.Work.__init__(self)


def main():
    torch.set_num_threads(1)
    dist.init_process_group("tern")
    gloo = dist.new_group(backend="gloo")
    x = torch.ones(8)
    p = x.data_ptr()
    pg = dist.distributed_c10d._get_default_group()
    comm, opts = pg.comm, dist.AllreduceOptions()
    out = ctypes.c_void_p()
    ref, h = ctypes.byref(out), comm._h

    def c_nb():
        tb._tern_iallreduce(h, p, p, 8, 0, 0, ref)
        tb._tern_wait(out.value)

    def with_work():
        tb._tern_iallreduce(h, p, p, 8, 0, 0, ref)
        _W()
        tb._tern_wait(out.value)

    def with_op():
        hash(opts.reduceOp)
        c_nb()

    def with_handle():
        comm._pending.pop(id(tb._HandleWork(comm, None, [x])))
        c_nb()

    fns = {"C iallreduce+wait": c_nb, "+ dist.Work()": with_work, "+ hash(reduceOp)": with_op,
           "+ _HandleWork": with_handle,
           "C blocking": lambda: tern._lib.lib.tern_allreduce(h, p, p, 8, 0, 0),
           "Comm.allreduce": lambda: comm.allreduce(x),
           "pg.allreduce+wait": lambda: pg.allreduce([x], opts).wait(),
           "dist.all_reduce": lambda: dist.all_reduce(x),
           "gloo": lambda: dist.all_reduce(x, group=gloo)}
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    times = {k: [] for k in fns}
    for _ in range(7):
        for k, f in fns.items():
            n = calls if k != "gloo" else max(50, calls // 20)  # Gloo is slow on a busy host
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            times[k].append((time.perf_counter() - t0) / n * 1e6)
    if dist.get_rank() == 0:
        base = statistics.median(times["C iallreduce+wait"])
        for k, v in times.items():
            m = statistics.median(v)
            print(f"n={dist.get_world_size()} {k:20s} {m:9.1f} us  x{m / base:6.2f} of the C call",
                  flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
