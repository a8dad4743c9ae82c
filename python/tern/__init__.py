"""tern: collectives for deep-learning training, from Python (a ctypes binding over libtern).

    import numpy as np, tern
    comm = tern.init()                 # rank, size, store from the environment (tern run, torchrun)
    x = np.ones(1024, dtype=np.float32)
    comm.allreduce(x)                  # in place: x is now the sum over ranks
    req = comm.iallreduce(x, op=tern.AVG)
    ...                                # compute while it moves
    req.wait()

With torch installed, `import tern` also registers the torch.distributed backend "tern"
(tern.backend): `dist.init_process_group("tern")`.

Buffers are numpy arrays or CPU torch tensors, C-contiguous, of float32, float64, float16,
bfloat16 (torch only), int8, uint8, int32 or int64. Calls follow NCCL's semantics: counts come
from the arrays, `out` defaults to in place (allreduce, broadcast) or to a new array
(reduce_scatter, allgather). Every failure tern reports raises TernError, whose message is
tern's own (the operation, the peer, the cause) and whose `status` is the tern_status; after one,
the communicator is broken and every later call raises the first error again. Arguments that
cannot describe a valid call (wrong sizes, unsupported dtypes) raise ValueError or TypeError
before anything is sent. A communicator is used by one thread at a time; tern.ddp holds the
PyTorch DDP communication hook, tern.swarm the swarm averaging (Moshpit) of peers that come and go.
"""

import ctypes
import itertools

from . import _lib

__all__ = ["init", "Comm", "Request", "TernError", "SUM", "PROD", "MIN", "MAX", "AVG",
           "version", "library_path"]

SUM, PROD, MIN, MAX, AVG = range(5)
SPLIT_UNDEFINED = -1  # TERN_SPLIT_UNDEFINED
_ERR_ABORTED = 8  # tern_status TERN_ERR_ABORTED
_OPS = {"sum": SUM, "prod": PROD, "min": MIN, "max": MAX, "avg": AVG}
_F32, _F64, _F16, _BF16, _I8, _U8, _I32, _I64 = range(8)
_NUMPY_DTYPES = {"float32": _F32, "float64": _F64, "float16": _F16, "int8": _I8, "uint8": _U8,
                 "int32": _I32, "int64": _I64}
_TORCH_DTYPES = {"float32": _F32, "float64": _F64, "float16": _F16, "bfloat16": _BF16,
                 "int8": _I8, "uint8": _U8, "int32": _I32, "int64": _I64}

library_path = _lib.path


def version():
    """libtern's version, "0.1.0"."""
    return _lib.lib.tern_version_str().decode()


class TernError(RuntimeError):
    """A failure tern reported. `status` is the tern_status (an int), `status_name` its name
    ("TERN_ERR_PEER_LOST"), `detail` tern_comm_last_error's text."""

    def __init__(self, what, status, detail):
        self.status = status
        self.status_name = _lib.lib.tern_status_str(status).decode().split(":")[0]
        self.detail = detail
        super().__init__(f"{what}: {_lib.lib.tern_status_str(status).decode()}"
                         + (f" ({detail})" if detail else ""))


_KINDS = {}  # type of an array -> its package ("numpy", "torch", ...)
_CODES = {"numpy": {}, "torch": {}}  # package -> {dtype object: tern dtype}, filled as met


def _code(kind, dt, what):
    """The tern dtype of dtype object dt of package kind, remembered: this runs on every call,
    and naming a dtype by string costs more than the rest of _Buf (docs/PYTORCH.md, "Speed")."""
    codes = _CODES[kind]
    code = codes.get(dt)
    if code is None:
        table = _NUMPY_DTYPES if kind == "numpy" else _TORCH_DTYPES
        name = dt.name if kind == "numpy" else str(dt).split(".")[-1]
        if name not in table:
            raise TypeError(f"{what}: dtype {name} is not one tern reduces "
                            f"({', '.join(sorted(table))})")
        code = codes[dt] = table[name]
    return code


class _Buf:
    """One array seen as (address, element count, tern dtype), holding a reference to it."""
    __slots__ = ("obj", "ptr", "count", "dtype")

    def __init__(self, obj, what):
        kind = _KINDS.get(type(obj))
        if kind is None:
            kind = _KINDS[type(obj)] = type(obj).__module__.split(".")[0]
        if kind == "torch":
            if not obj.is_cpu:
                raise ValueError(f"{what}: tern moves CPU tensors; this one is on {obj.device}")
            if not obj.is_contiguous():
                raise ValueError(f"{what}: the tensor must be contiguous")
            self.ptr, self.count = obj.data_ptr(), obj.numel()
        elif kind == "numpy":
            if not obj.flags.c_contiguous:
                raise ValueError(f"{what}: the numpy array must be C-contiguous")
            self.ptr, self.count = obj.ctypes.data, obj.size
        else:
            raise TypeError(f"{what}: want a numpy array or a torch tensor, not {type(obj).__name__}")
        self.obj, self.dtype = obj, _code(kind, obj.dtype, what)


def _empty_like(buf, count):
    """A new array of count elements of buf's kind and dtype."""
    x = buf.obj
    if type(x).__module__.split(".")[0] == "numpy":
        import numpy
        return numpy.empty(count, dtype=x.dtype)
    import torch
    return torch.empty(count, dtype=x.dtype)


def _op(op):
    if isinstance(op, str):
        if op.lower() not in _OPS:
            raise ValueError(f"op '{op}': want one of {', '.join(_OPS)}")
        return _OPS[op.lower()]
    if op not in range(5):
        raise ValueError(f"op {op}: want tern.SUM, PROD, MIN, MAX or AVG")
    return op


class _Source:
    """The sender's rank of a receive from any source, written by tern when it completes."""
    __slots__ = ("rank",)

    def __init__(self, rank):
        self.rank = rank

    def value(self):
        return self.rank.value


class Request:
    """One outstanding nonblocking operation. wait() returns its result (the output array) or
    raises TernError; test() says whether it has completed. The arrays stay referenced until
    then, so they cannot be freed under tern."""

    def __init__(self, comm, handle, result, keep, what):
        self._comm, self._handle, self._result, self._keep, self._what = comm, handle, result, keep, what
        self._error = None
        comm._pending[id(self)] = self

    def _finish(self, rc):
        self._handle = None
        self._comm._pending.pop(id(self), None)
        self._keep = None
        if rc != 0:
            self._error = self._comm._error(self._what, rc)

    def wait(self):
        """Blocks until the operation completes (TERN_TIMEOUT bounds it); returns its result."""
        if self._handle is not None:
            self._finish(_lib.lib.tern_wait(self._handle))
        if self._error is not None:
            raise self._error
        return self._result.value() if type(self._result) is _Source else self._result

    def test(self):
        """True once the operation has completed (then wait() returns at once)."""
        if self._handle is None:
            return True
        done = ctypes.c_int(0)
        rc = _lib.lib.tern_test(self._handle, ctypes.byref(done))
        if done.value or rc != 0:
            self._finish(rc)
            return True
        return False


class Comm:
    """A member of a group of ranks. Comm() joins from the environment, as tern.init() does;
    Comm(rank, size, "host:port") joins explicitly (rank 0 serves the store when nothing
    listens there)."""

    def __init__(self, rank=None, size=None, store=None):
        handle = ctypes.c_void_p()
        self._pending = {}
        self._h = None
        if rank is None:
            rc = _lib.lib.tern_comm_init_env(ctypes.byref(handle))
        else:
            rc = _lib.lib.tern_comm_init(ctypes.byref(handle), rank, size, store.encode())
        if rc != 0:
            raise TernError("joining the group", rc, _lib.lib.tern_comm_last_error(None).decode())
        self._h = handle
        self.rank = _lib.lib.tern_comm_rank(handle)
        self.size = _lib.lib.tern_comm_size(handle)

    @classmethod
    def _adopt(cls, handle):
        c = cls.__new__(cls)
        c._pending, c._h = {}, handle
        c.rank, c.size = _lib.lib.tern_comm_rank(handle), _lib.lib.tern_comm_size(handle)
        return c

    def split(self, color, key=0):
        """MPI_Comm_split: every rank calls it; the ranks with the same color (>= 0) form a new
        Comm, ranked by key (ties by this rank). color None (TERN_SPLIT_UNDEFINED): no Comm,
        None is returned."""
        child = ctypes.c_void_p()
        rc = _lib.lib.tern_comm_split(self._handle(), SPLIT_UNDEFINED if color is None else color,
                                      key, ctypes.byref(child))
        if rc != 0:
            raise self._error("split", rc)
        return Comm._adopt(child) if child.value else None

    def _error(self, what, rc):
        detail = _lib.lib.tern_comm_last_error(self._h) if self._h else b""
        return TernError(what, rc, detail.decode(errors="replace"))

    def _handle(self):
        if self._h is None:
            raise ValueError("tern: the communicator is closed")
        return self._h

    def _call(self, what, fn, args, result, keep, blocking):
        h = self._handle()
        if blocking:
            rc = fn(h, *args)
            if rc != 0:
                raise self._error(what, rc)
            return result
        req = ctypes.c_void_p()
        rc = fn(h, *args, ctypes.byref(req))
        if rc != 0:
            raise self._error(what, rc)
        return Request(self, req, result, keep, what)

    # ---- the collectives: each has a blocking form and an i-form that returns a Request ----

    def _allreduce(self, x, op, out, blocking):
        s = _Buf(x, "allreduce")
        r = s if out is None or out is x else _Buf(out, "allreduce out")
        if r.count != s.count or r.dtype != s.dtype:
            raise ValueError(f"allreduce: out must hold {s.count} elements of x's dtype")
        fn = _lib.lib.tern_allreduce if blocking else _lib.lib.tern_iallreduce
        return self._call("allreduce", fn, (s.ptr, r.ptr, s.count, s.dtype, _op(op)), r.obj,
                          (s, r), blocking)

    def allreduce(self, x, op=SUM, out=None):
        """out[i] = op over ranks of x[i]; in place when out is None. Returns out."""
        return self._allreduce(x, op, out, True)

    def iallreduce(self, x, op=SUM, out=None):
        return self._allreduce(x, op, out, False)

    def _reduce_scatter(self, x, op, out, blocking):
        s = _Buf(x, "reduce_scatter")
        if s.count % self.size:
            raise ValueError(f"reduce_scatter: x has {s.count} elements, not a multiple of "
                             f"{self.size} ranks")
        n = s.count // self.size
        r = _Buf(_empty_like(s, n) if out is None else out, "reduce_scatter out")
        if r.count != n or r.dtype != s.dtype:
            raise ValueError(f"reduce_scatter: out must hold {n} elements of x's dtype")
        fn = _lib.lib.tern_reduce_scatter if blocking else _lib.lib.tern_ireduce_scatter
        return self._call("reduce_scatter", fn, (s.ptr, r.ptr, n, s.dtype, _op(op)), r.obj,
                          (s, r), blocking)

    def reduce_scatter(self, x, op=SUM, out=None):
        """This rank's block (x.size / size elements) of the reduction of x over ranks."""
        return self._reduce_scatter(x, op, out, True)

    def ireduce_scatter(self, x, op=SUM, out=None):
        return self._reduce_scatter(x, op, out, False)

    def _allgather(self, x, out, blocking):
        s = _Buf(x, "allgather")
        r = _Buf(_empty_like(s, s.count * self.size) if out is None else out, "allgather out")
        if r.count != s.count * self.size or r.dtype != s.dtype:
            raise ValueError(f"allgather: out must hold {s.count * self.size} elements of x's dtype")
        fn = _lib.lib.tern_allgather if blocking else _lib.lib.tern_iallgather
        return self._call("allgather", fn, (s.ptr, r.ptr, s.count, s.dtype), r.obj, (s, r),
                          blocking)

    def allgather(self, x, out=None):
        """Every rank's x, rank by rank, in one flat array of size * x.size elements."""
        return self._allgather(x, out, True)

    def iallgather(self, x, out=None):
        return self._allgather(x, out, False)

    def _broadcast(self, x, root, out, blocking):
        s = _Buf(x, "broadcast")
        r = s if out is None or out is x else _Buf(out, "broadcast out")
        if r.count != s.count or r.dtype != s.dtype:
            raise ValueError(f"broadcast: out must hold {s.count} elements of x's dtype")
        fn = _lib.lib.tern_broadcast if blocking else _lib.lib.tern_ibroadcast
        return self._call("broadcast", fn, (s.ptr, r.ptr, s.count, s.dtype, root), r.obj,
                          (s, r), blocking)

    def broadcast(self, x, root=0, out=None):
        """root's x reaches every rank's out (x itself when out is None). Returns out."""
        return self._broadcast(x, root, out, True)

    def ibroadcast(self, x, root=0, out=None):
        return self._broadcast(x, root, out, False)

    def _reduce(self, x, op, root, out, blocking):
        s = _Buf(x, "reduce")
        r = s if out is None or out is x else _Buf(out, "reduce out")
        if r.count != s.count or r.dtype != s.dtype:
            raise ValueError(f"reduce: out must hold {s.count} elements of x's dtype")
        fn = _lib.lib.tern_reduce if blocking else _lib.lib.tern_ireduce
        return self._call("reduce", fn, (s.ptr, r.ptr, s.count, s.dtype, _op(op), root), r.obj,
                          (s, r), blocking)

    def reduce(self, x, op=SUM, root=0, out=None):
        """root's out (x itself when out is None) = op over ranks of x; out is left alone
        elsewhere. Returns out."""
        return self._reduce(x, op, root, out, True)

    def ireduce(self, x, op=SUM, root=0, out=None):
        return self._reduce(x, op, root, out, False)

    def _alltoall(self, x, out, blocking):
        s = _Buf(x, "alltoall")
        if s.count % self.size:
            raise ValueError(f"alltoall: x has {s.count} elements, not a multiple of "
                             f"{self.size} ranks")
        r = _Buf(_empty_like(s, s.count) if out is None else out, "alltoall out")
        if r.count != s.count or r.dtype != s.dtype:
            raise ValueError(f"alltoall: out must hold {s.count} elements of x's dtype")
        fn = _lib.lib.tern_alltoall if blocking else _lib.lib.tern_ialltoall
        return self._call("alltoall", fn, (s.ptr, r.ptr, s.count // self.size, s.dtype), r.obj,
                          (s, r), blocking)

    def alltoall(self, x, out=None):
        """Block j of this rank's x (x.size / size elements) lands in block `rank` of rank j's
        out (a new array when out is None; never x itself). Returns out."""
        return self._alltoall(x, out, True)

    def ialltoall(self, x, out=None):
        return self._alltoall(x, out, False)

    def _alltoallv(self, x, send_counts, recv_counts, out, send_displs, recv_displs, blocking):
        n, s = self.size, _Buf(x, "alltoallv")
        counts = [send_counts, send_displs, recv_counts, recv_displs]
        for k in (1, 3):  # blocks back to back unless placed
            if counts[k] is None and counts[k - 1] is not None:
                counts[k] = [0, *itertools.accumulate(counts[k - 1])][:len(counts[k - 1])]
        for name, c in zip(("send_counts", "send_displs", "recv_counts", "recv_displs"), counts):
            if c is None or len(c) != n or min(c, default=0) < 0:
                raise ValueError(f"alltoallv: {name} must hold {n} counts >= 0")
        ext = [max((d + c for c, d in zip(counts[k], counts[k + 1]) if c), default=0)
               for k in (0, 2)]
        if s.count < ext[0]:
            raise ValueError(f"alltoallv: x has {s.count} elements; its blocks need {ext[0]}")
        r = s if out is x else _Buf(_empty_like(s, ext[1]) if out is None else out,
                                    "alltoallv out")
        if r.count < ext[1] or r.dtype != s.dtype:
            raise ValueError(f"alltoallv: out must hold {ext[1]} elements of x's dtype")
        arrays = [(ctypes.c_size_t * n)(*c) for c in counts]
        fn = _lib.lib.tern_alltoallv if blocking else _lib.lib.tern_ialltoallv
        return self._call("alltoallv", fn, (s.ptr, arrays[0], arrays[1], r.ptr, arrays[2],
                                            arrays[3], s.dtype), r.obj, (s, r, arrays), blocking)

    def alltoallv(self, x, send_counts, recv_counts, out=None, send_displs=None,
                  recv_displs=None):
        """MPI_Alltoallv: send_counts[j] elements of x, at send_displs[j], go to rank j, whose
        recv_counts[this rank] elements land in its out at recv_displs[this rank]. Displacements
        default to the blocks back to back; out to a new array (x itself: in place). Every pair
        must agree on the counts between them, or both ends raise TernError (invalid argument).
        Returns out."""
        return self._alltoallv(x, send_counts, recv_counts, out, send_displs, recv_displs, True)

    def ialltoallv(self, x, send_counts, recv_counts, out=None, send_displs=None,
                   recv_displs=None):
        return self._alltoallv(x, send_counts, recv_counts, out, send_displs, recv_displs, False)

    def _gather(self, x, root, out, blocking):
        s, r = _Buf(x, "gather"), None
        if self.rank == root:
            r = _Buf(_empty_like(s, s.count * self.size) if out is None else out, "gather out")
            if r.count != s.count * self.size or r.dtype != s.dtype:
                raise ValueError(f"gather: out must hold {s.count * self.size} elements of x's dtype")
        fn = _lib.lib.tern_gather if blocking else _lib.lib.tern_igather
        return self._call("gather", fn, (s.ptr, r and r.ptr, s.count, s.dtype, root),
                          r and r.obj, (s, r), blocking)

    def gather(self, x, root=0, out=None):
        """root gets every rank's x, rank by rank, in one flat array of size * x.size elements
        (out, or a new one); the others get None."""
        return self._gather(x, root, out, True)

    def igather(self, x, root=0, out=None):
        return self._gather(x, root, out, False)

    def _scatter(self, x, out, root, blocking):
        r, s = _Buf(out, "scatter out"), None
        if self.rank == root:
            s = _Buf(x, "scatter")
            if s.count != r.count * self.size or r.dtype != s.dtype:
                raise ValueError(f"scatter: x must hold {r.count * self.size} elements of out's "
                                 "dtype on the root")
        fn = _lib.lib.tern_scatter if blocking else _lib.lib.tern_iscatter
        return self._call("scatter", fn, (s and s.ptr, r.ptr, r.count, r.dtype, root), r.obj,
                          (s, r), blocking)

    def scatter(self, x, out, root=0):
        """Block j of root's x (size * out.size elements; ignored elsewhere, may be None) lands
        in rank j's out. Returns out."""
        return self._scatter(x, out, root, True)

    def iscatter(self, x, out, root=0):
        return self._scatter(x, out, root, False)

    def _p2p(self, what, x, peer, blocking):
        b = _Buf(x, what)
        if what == "send":
            fn = _lib.lib.tern_send if blocking else _lib.lib.tern_isend
        else:
            fn = _lib.lib.tern_recv if blocking else _lib.lib.tern_irecv
        return self._call(f"{what} (peer {peer})", fn, (b.ptr, b.count, b.dtype, peer), b.obj,
                          (b,), blocking)

    def send(self, x, peer):
        """Sends x to rank peer, whose matching recv (same count and dtype) takes it; the sends
        to one peer arrive in order."""
        return self._p2p("send", x, peer, True)

    def isend(self, x, peer):
        return self._p2p("send", x, peer, False)

    def recv(self, x, peer):
        """Fills x with the next send of rank peer to this rank. Returns x."""
        return self._p2p("recv", x, peer, True)

    def irecv(self, x, peer):
        return self._p2p("recv", x, peer, False)

    def _recv_any(self, x, blocking):
        b, source = _Buf(x, "recv_any"), ctypes.c_int(-1)
        fn = _lib.lib.tern_recv_any if blocking else _lib.lib.tern_irecv_any
        got = self._call("recv (any source)", fn, (b.ptr, b.count, b.dtype, ctypes.byref(source)),
                         _Source(source), (b, source), blocking)
        return got.value() if blocking else got

    def recv_any(self, x):
        """Fills x with the next send to this rank of whichever rank sends one first (peers with
        an irecv of their own posted are left to it); returns the sender's rank."""
        return self._recv_any(x, True)

    def irecv_any(self, x):
        """recv_any's i-form: its Request's wait() returns the sender's rank."""
        return self._recv_any(x, False)

    def barrier(self):
        """Returns once every rank has entered it."""
        return self._call("barrier", _lib.lib.tern_barrier, (), None, (), True)

    def ibarrier(self):
        return self._call("barrier", _lib.lib.tern_ibarrier, (), None, (), False)

    # ---- life ----

    def abort(self):
        """Ends every operation in progress, from any thread: waiters raise TernError
        (TERN_ERR_ABORTED) and the peers see this rank leave."""
        if self._h is not None:
            _lib.lib.tern_comm_abort(self._h)

    def close(self):
        """Leaves the group. Outstanding requests are cancelled: their wait() raises."""
        if self._h is None:
            return
        for req in list(self._pending.values()):
            req._handle, req._keep = None, None
            req._error = TernError(req._what, _ERR_ABORTED, "the communicator was closed first")
        self._pending.clear()
        _lib.lib.tern_comm_destroy(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"<tern.Comm rank {self.rank} of {self.size}>" if self._h else "<tern.Comm closed>"


def init():
    """Joins the group the environment describes (TERN_RANK, TERN_WORLD_SIZE, TERN_STORE as
    `tern run` sets them, or torchrun's, Open MPI's, MPICH's or Slurm's variables)."""
    return Comm()


def _register_torch_backend():
    """`import tern` makes "tern" a torch.distributed backend when torch is installed
    (tern/backend.py); numpy-only users do not pay for importing torch."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return
    from . import backend
    backend.register()


_register_torch_backend()
