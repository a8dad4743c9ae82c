"""tern.backend: tern as a torch.distributed backend, registered as "tern" by `import tern`.

    import torch.distributed as dist, tern
    dist.init_process_group("tern")        # env:// (torchrun, tern run), tcp://, file://

Rendezvous goes through the c10d Store torch hands a backend, as Gloo's does: rank 0 of the group
picks a free port, publishes "host:port" under the store key "tern/store", and serves tern's own
store there (it also watches the ranks' liveness: docs/PYTORCH.md); every rank reads the key and
joins. `dist.new_group(ranks)` calls the creator again with a prefixed store and the group's
ranks, so a subgroup is a communicator of its own. The host rank 0 publishes: TERN_BACKEND_HOST,
else MASTER_ADDR, else this host's name as the resolver gives it.

Each call starts tern's nonblocking operation(s) and returns a Work whose wait() waits for them
on the calling thread (a communicator is used by one thread at a time). A synchronous call
(async_op=False: torch's function waits at once) costs no handoff to tern's progress thread:
tern leaves a request to its caller for its first millisecond, and a wait within it runs it on the
calling thread (docs/API.md, "Nonblocking twins"). Reductions take tern's
dtypes and SUM, PRODUCT, MIN, MAX, AVG; calls that only move data (broadcast, the gathers,
scatter, all-to-all, send/recv) take any dtype, moved as bytes. Tensors must be contiguous CPU
tensors; anything else raises ValueError or TypeError before anything is sent.
"""

import ctypes
import datetime
import os
import socket

import torch
import torch.distributed as dist

from . import AVG, MAX, MIN, PROD, SUM, Comm, TernError, _lib

_STORE_KEY = "tern/store"
_tern_iallreduce, _tern_wait = _lib.lib.tern_iallreduce, _lib.lib.tern_wait

_TERN_OPS = (("SUM", SUM), ("PRODUCT", PROD), ("MIN", MIN), ("MAX", MAX), ("AVG", AVG))
# Keyed by the number of torch's RedOpType; _BY_HASH by the hash of a ReduceOp, which torch makes
# from that number: reading opts.reduceOp.op costs 0.6 us a call, hash(opts.reduceOp) 0.15
# (each ReduceOp is a new object, so identity cannot key it).
_REDUCE_OPS = {int(getattr(dist.ReduceOp.RedOpType, name)): op for name, op in _TERN_OPS}


def _hash_table():
    """{hash of a ReduceOp: tern op} when each hash torch gives is the op's number (PREMUL_SUM,
    which carries a factor, cannot be set bare and is not looked at); else {}."""
    for name in dist.ReduceOp.RedOpType.__members__:
        opts = dist.AllreduceOptions()
        try:
            opts.reduceOp = getattr(dist.ReduceOp, name)  # as torch's all_reduce sets it
        except TypeError:
            continue
        if hash(opts.reduceOp) != int(opts.reduceOp.op):
            return {}
    return {int(getattr(dist.ReduceOp.RedOpType, name)): op for name, op in _TERN_OPS}


_BY_HASH = _hash_table()
_TERN_DTYPES = {torch.float32: 0, torch.float64: 1, torch.float16: 2, torch.bfloat16: 3,
                torch.int8: 4, torch.uint8: 5, torch.int32: 6, torch.int64: 7}  # tern_dtype


def _op_of(opts, what):
    if opts is None:
        return SUM
    op = _BY_HASH.get(hash(opts.reduceOp))
    if op is not None:
        return op
    kind = opts.reduceOp.op
    op = _REDUCE_OPS.get(int(kind))
    if op is None:
        raise ValueError(f"tern: {what}: reduce op {str(kind).split('.')[-1]} is not one tern "
                         "has (SUM, PRODUCT, MIN, MAX, AVG)")
    return op


def _root(opts):
    return getattr(opts, "rootRank", 0)


def _check(t, what):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"tern: {what}: want a torch tensor, not {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"tern: {what}: tern moves CPU tensors; this one is on {t.device}")
    if not t.is_contiguous():
        raise ValueError(f"tern: {what}: the tensor must be contiguous (call .contiguous())")
    return t


def _reducible(t, what):
    _check(t, what)
    if t.dtype not in _TERN_DTYPES:
        raise TypeError(f"tern: {what}: dtype {t.dtype} is not one tern reduces "
                        "(float32, float64, float16, bfloat16, int8, uint8, int32, int64)")
    return t


def _bytes(t, what):
    """A contiguous tensor seen as its bytes, for calls that only move data."""
    _check(t, what)
    if t.dtype == torch.uint8:
        return t.reshape(-1)
    return t.reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)


def _same_layout(tensors, what):
    first = tensors[0]
    for t in tensors[1:]:
        if t.dtype != first.dtype or t.numel() != first.numel():
            raise ValueError(f"tern: {what}: every tensor of the list must have the size and "
                             f"dtype of the first ({first.numel()} of {first.dtype})")


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"tern: {what}: one tensor per rank (CPU), not {len(tensors)}")
    return tensors[0]


_unfinished = set()
_engine = torch.autograd.Variable._execution_engine


class Work(dist.Work):
    """The tern requests of one call. wait() waits for them all, runs the call's finishing step
    (copying out of a staging buffer) and raises TernError if one failed."""

    def __init__(self, reqs, result, finish=None, source=-1):
        super().__init__()
        self._reqs, self._result, self._finish, self._source = reqs, result, finish, source
        self._error = None
        self._done = not reqs and finish is None
        if not self._done:
            # A Work that C++ holds (DDP's) loses its Python half when Python drops it, and
            # C++ then waits on the base class's flag, which nothing sets: kept until done.
            _unfinished.add(self)

    def _complete(self):
        try:
            for req in self._reqs:
                req.wait()
            if self._finish is not None:
                self._finish()
        except TernError as e:
            self._error = e
        self._reqs, self._finish, self._done = [], None, True
        _unfinished.discard(self)

    def wait(self, timeout=None):
        if not self._done:
            self._complete()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        if not self._done and all(req.test() for req in self._reqs):
            self._complete()
        return self._done

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self):
        return self._result

    def source_rank(self):
        return self._source

    _source_rank = source_rank

    def synchronize(self):
        self.wait()

    def get_future(self):
        """A Future completed when the operation is. Asked for during a backward pass (DDP's
        reducer, for each bucket), it is completed by an autograd callback, queued before the
        reducer's own finalize (which waits on it from C++, where nothing else could finish tern's
        requests on this thread), so the buckets' all-reduces overlap the rest of backward.
        Elsewhere it waits at once. A failure completes it with the unreduced tensors (so that DDP
        finalizes its step) and raises TernError from backward after DDP's finalize, as tern.ddp's
        hook does (docs/PYTORCH.md)."""
        fut = torch.futures.Future()
        if not self._done:
            try:
                _engine.queue_callback(lambda: self._settle(fut, in_backward=True))
                return fut
            except RuntimeError:  # not in a backward pass
                pass
        self._settle(fut, in_backward=False)
        return fut

    def _settle(self, fut, in_backward):
        try:
            self.wait()
        except TernError as e:
            if not in_backward:
                fut.set_exception(e)
                return
            fut.set_result(self._result)
            _engine.queue_callback(lambda err=e: _raise(err))
            return
        fut.set_result(self._result)


class _HandleWork(Work):
    """One tern request the backend started itself, waited for through its handle, with no
    tern.Request between: all_reduce's Work, the call torch and DDP make most, whose cost is
    the backend's overhead (docs/PYTORCH.md, "Speed"; each attribute set here costs). It stands
    in the communicator's table of pending requests as a Request does, so that closing the
    communicator first cancels it (Comm.close sets _handle to None and _error)."""

    _keep, _error, _finish, _source, _what = None, None, None, -1, "allreduce"
    # done once the handle is gone: waited for, found done by a test, or cancelled by Comm.close;
    # one attribute fewer to set and clear a call
    _done = property(lambda self: self._handle is None)

    def __init__(self, comm, handle, result):
        dist.Work.__init__(self)
        self._comm, self._handle, self._result = comm, handle, result
        comm._pending[id(self)] = self  # which also keeps it alive until done (_unfinished)

    def _end(self, rc):
        self._handle = None
        del self._comm._pending[id(self)]
        if rc:
            self._error = self._comm._error(self._what, rc)

    def wait(self, timeout=None):
        if self._handle is not None:
            self._end(_tern_wait(self._handle))
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        if self._handle is not None:
            done = ctypes.c_int(0)
            rc = _lib.lib.tern_test(self._handle, ctypes.byref(done))
            if done.value or rc:
                self._end(rc)
        return self._handle is None


class _AnySourceWork(Work):
    """A receive from any source: its source rank is known once it completes."""

    def __init__(self, req, tensors):
        super().__init__([req], tensors)
        self._req, self._sender = req, -1

    def _complete(self):
        req = self._req
        super()._complete()
        if self._error is None:
            self._sender = req.wait()  # done already: returns the sender at once

    def source_rank(self):
        self.wait()
        return self._sender

    _source_rank = source_rank


def _raise(err):
    raise err


class ProcessGroupTern(dist.ProcessGroup):
    """A torch.distributed process group over one tern communicator."""

    def __init__(self, comm):
        super().__init__(comm.rank, comm.size)
        self.comm = comm
        self._out = ctypes.c_void_p()  # the request a nonblocking call returns, read at once
        self._out_ref = ctypes.byref(self._out)

    def getBackendName(self):
        return "tern"

    # ---- reductions ----

    def allreduce(self, tensors, opts=None):
        # tern_iallreduce called directly, not through Comm.iallreduce's generic checks: this is
        # the call DDP and training loops make most, and its overhead is the backend's
        # (docs/PYTORCH.md's speed table)
        op = SUM if opts is None else _BY_HASH.get(hash(opts.reduceOp))
        if op is None:
            op = _op_of(opts, "allreduce")  # another hash, or an op tern lacks (it raises)
        comm = self.comm
        if len(tensors) != 1:
            return Work([comm.iallreduce(_reducible(t, "allreduce"), op=op) for t in tensors],
                        tensors)
        t = tensors[0]
        dt = _TERN_DTYPES.get(t.dtype)
        if dt is None or not t.is_cpu or not t.is_contiguous():
            _reducible(t, "allreduce")  # raises what is wrong
        p = t.data_ptr()
        rc = _tern_iallreduce(comm._h or comm._handle(), p, p, t.numel(), dt, op, self._out_ref)
        if rc:
            raise comm._error("allreduce", rc)
        return _HandleWork(comm, self._out.value, tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts=None):
        op = _op_of(opts, "reduce")
        t = _reducible(_one(tensors, "reduce"), "reduce")
        return Work([self.comm.ireduce(t, op=op, root=_root(opts))], tensors)

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op_of(opts, "reduce_scatter_tensor")
        _reducible(input, "reduce_scatter_tensor input")
        _reducible(output, "reduce_scatter_tensor output")
        if input.numel() != output.numel() * self.comm.size or input.dtype != output.dtype:
            raise ValueError(f"tern: reduce_scatter_tensor: the input must hold {self.comm.size}"
                             f" x the output's {output.numel()} elements, of its dtype")
        return Work([self.comm.ireduce_scatter(input.reshape(-1), op=op,
                                               out=output.reshape(-1))], [output])

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        output = _one(output_tensors, "reduce_scatter")
        inputs = _one(input_tensors, "reduce_scatter")
        if len(inputs) != self.comm.size:
            raise ValueError(f"tern: reduce_scatter: want {self.comm.size} input tensors")
        _same_layout([output] + list(inputs), "reduce_scatter")
        flat = torch.cat([_check(t, "reduce_scatter").reshape(-1) for t in inputs])
        return self._reduce_scatter_base(output, flat, opts)

    # ---- data movement ----

    def broadcast(self, tensors, opts=None):
        return Work([self.comm.ibroadcast(_bytes(t, "broadcast"), root=_root(opts))
                     for t in tensors], tensors)

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self.comm.size or output.dtype != input.dtype:
            raise ValueError(f"tern: all_gather_into_tensor: the output must hold "
                             f"{self.comm.size} x the input's {input.numel()} elements, "
                             "of its dtype")
        return Work([self.comm.iallgather(_bytes(input, "all_gather input"),
                                          out=_bytes(output, "all_gather output"))], [output])

    def allgather(self, output_tensors, input_tensors, opts=None):
        reqs, copies = [], []
        for outs, x in zip(output_tensors, input_tensors):
            if len(outs) != self.comm.size:
                raise ValueError(f"tern: all_gather: want {self.comm.size} output tensors")
            _same_layout([x] + list(outs), "all_gather")
            flat = torch.empty(x.numel() * self.comm.size, dtype=x.dtype)
            reqs.append(self.comm.iallgather(_bytes(x, "all_gather input"), out=_bytes(flat, "")))
            copies.append((flat, outs))

        def finish():
            for flat, outs in copies:
                for out, block in zip(outs, flat.chunk(self.comm.size)):
                    out.copy_(block.view_as(out))
        return Work(reqs, output_tensors, finish)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """output_lists[r][j] gets rank r's input_list[j]: one all_gather per input."""
        if len(output_lists) != self.comm.size:
            raise ValueError(f"tern: all_gather_coalesced: want {self.comm.size} output lists")
        per_input = [[outs[j] for outs in output_lists] for j in range(len(input_list))]
        return self.allgather(per_input, input_list, opts)

    def _root_list(self, lists, mine, what, root):
        """The root's list of size tensors (checked against mine); None off the root, where
        torch passes an empty one."""
        if self.comm.rank != root:
            if lists and any(lists):
                raise ValueError(f"tern: {what}: only the root passes a list of tensors")
            return None
        many = _one(lists, what)
        if len(many) != self.comm.size:
            raise ValueError(f"tern: {what}: want {self.comm.size} tensors on the root")
        _same_layout([mine] + list(many), what)
        return many

    def gather(self, output_tensors, input_tensors, opts=None):
        """tern_gather (a checker-proven schedule: src/coll/algo/direct.c) into one flat
        buffer, cut into the root's list when it completes."""
        x, root = _one(input_tensors, "gather"), _root(opts)
        outs = self._root_list(output_tensors, x, "gather", root)
        if outs is None:
            return Work([self.comm.igather(_bytes(x, "gather"), root)], output_tensors)
        flat = torch.empty(x.numel() * self.comm.size, dtype=x.dtype)
        req = self.comm.igather(_bytes(x, "gather"), root, out=_bytes(flat, "gather"))

        def finish():
            for out, block in zip(outs, flat.chunk(self.comm.size)):
                out.copy_(block.view_as(out))
        return Work([req], output_tensors, finish)

    def scatter(self, output_tensors, input_tensors, opts=None):
        """tern_scatter (src/coll/algo/direct.c) from the root's list, concatenated."""
        out, root = _one(output_tensors, "scatter"), _root(opts)
        ins = self._root_list(input_tensors, out, "scatter", root)
        flat = None if ins is None else _bytes(
            torch.cat([_check(t, "scatter").reshape(-1) for t in ins]), "scatter")
        return Work([self.comm.iscatter(flat, _bytes(out, "scatter"), root)], output_tensors)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        """all_to_all_single: tern_ialltoall for equal splits, tern_ialltoallv (a checked
        schedule: src/coll/algo/direct.c) for split sizes, both on the tensors' bytes, in place
        when output is input."""
        n = self.comm.size
        if output.dtype != input.dtype:
            raise ValueError("tern: all_to_all_single: input and output dtypes differ")
        src = _bytes(input, "all_to_all_single input")
        dst = src if output.data_ptr() == input.data_ptr() else _bytes(
            output, "all_to_all_single output")
        if not output_split_sizes and not input_split_sizes:
            if input.numel() != output.numel() or input.numel() % n:
                raise ValueError(f"tern: all_to_all_single: input and output must hold the same "
                                 f"number of elements, a multiple of {n}")
            return Work([self.comm.ialltoall(src, out=dst)], [output])
        send = _split_bytes(input, input_split_sizes, n, "input")
        recv = _split_bytes(output, output_split_sizes, n, "output")
        return Work([self.comm.ialltoallv(src, send, recv, out=dst)], [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        """all_to_all with lists: the inputs concatenated, one tern_ialltoallv, the result cut
        into the outputs when it completes."""
        n = self.comm.size
        if len(output_tensors) != n or len(input_tensors) != n:
            raise ValueError(f"tern: all_to_all: want {n} input and {n} output tensors")
        sends = [_bytes(t, "all_to_all input") for t in input_tensors]
        recvs = [_bytes(t, "all_to_all output") for t in output_tensors]
        flat_in = torch.cat(sends) if sends else torch.empty(0, dtype=torch.uint8)
        sizes = [t.numel() for t in recvs]
        flat_out = torch.empty(sum(sizes), dtype=torch.uint8)
        req = self.comm.ialltoallv(flat_in, [t.numel() for t in sends], sizes, out=flat_out)

        def finish():
            for t, block in zip(recvs, flat_out.split(sizes)):
                t.copy_(block)
        return Work([req], output_tensors, finish)

    # ---- point to point ----

    def send(self, tensors, dst, tag=0):
        return Work([self.comm.isend(_bytes(t, "send"), dst) for t in tensors], tensors)

    def recv(self, tensors, src, tag=0):
        return Work([self.comm.irecv(_bytes(t, "recv"), src) for t in tensors], tensors,
                    source=src)

    def recv_anysource(self, tensors, tag=0):
        """tern_irecv_any: the next send to this rank from whichever rank sends first; the
        Work's source rank is the sender's."""
        req = self.comm.irecv_any(_bytes(_one(tensors, "recv"), "recv"))
        return _AnySourceWork(req, tensors)

    def barrier(self, opts=None):
        return Work([self.comm.ibarrier()], [])

    def shutdown(self):
        self.comm.close()


def _split_bytes(t, sizes, n, what):
    """all_to_all_single's split sizes (rows of t's first dimension; empty: equal parts) as byte
    counts, checked against t."""
    _check(t, f"all_to_all_single {what}")
    rows = t.shape[0] if t.dim() else 1
    row = (t.numel() // rows if rows else 0) * t.element_size()
    if not sizes:
        if rows % n:
            raise ValueError(f"tern: all_to_all_single: the {what} does not cut into {n} equal parts")
        return [rows // n * row] * n
    if len(sizes) != n or sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(f"tern: all_to_all_single: {what} split sizes {list(sizes)} do not cut "
                         f"its {rows} rows into {n} parts")
    return [s * row for s in sizes]


def _advertised_host():
    for var in ("TERN_BACKEND_HOST", "MASTER_ADDR"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _free_port(host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def create(store, rank, size, timeout):
    """The creator torch calls (Backend.register_backend): meets the group's ranks through
    store and returns their process group."""
    if rank == 0:
        host = _advertised_host()
        addr = f"{host}:{_free_port(host)}"
        store.set(_STORE_KEY, addr)
    else:
        store.wait([_STORE_KEY], timeout if isinstance(timeout, datetime.timedelta)
                   else datetime.timedelta(seconds=300))
        addr = store.get(_STORE_KEY).decode()
    return ProcessGroupTern(Comm(rank, size, addr))


def register():
    """Makes "tern" a backend name of torch.distributed; `import tern` calls it."""
    if "TERN" not in dist.Backend._plugins:
        dist.Backend.register_backend("tern", create)
