"""tern.ddp: tern under PyTorch's DistributedDataParallel.

    import tern, tern.ddp
    comm = tern.init()
    model = torch.nn.parallel.DistributedDataParallel(net, process_group=tern.ddp.ProcessGroup(comm))
    model.register_comm_hook(tern.ddp.HookState(comm), tern.ddp.allreduce_hook)

allreduce_hook all-reduces DDP's gradient buckets through tern: each bucket's hook starts a
nonblocking AVG all-reduce (tern sums, then divides by the number of ranks once: the mean DDP
wants) and returns a Future; the communication advances on tern's progress thread while autograd
computes the next buckets; the hook of the last bucket waits for them all, in order, and
completes their Futures. So every tern call stays on the thread that runs backward, as a
communicator requires. A failure raises TernError out of loss.backward(), with tern's message;
that step's gradients are then not reduced, and the communicator is broken for good.

ProcessGroup(comm) is the "tern" backend's process group (tern.backend.ProcessGroupTern) over a
Comm of the program's own: what DDP needs besides the gradients (the broadcast of rank 0's
parameters, the all-gather that checks every rank has the same shapes) done with tern too. Any
process group works with the hook (Gloo's, say); this one means a job needs no other
communication library.
"""

import torch

from . import AVG, TernError
from .backend import ProcessGroupTern

# At most this many buckets in flight before the hook waits for the oldest: well under
# TERN_MAX_OUTSTANDING (64), the requests a communicator holds at once.
MAX_IN_FLIGHT = 32


class HookState:
    """The hook's state: the communicator, the buckets in flight, a failure to raise."""

    def __init__(self, comm):
        self.comm = comm
        self.in_flight = []  # (request, future, bucket tensor), in issue order
        self.error = None


def _raise_error(state):
    err, state.error = state.error, None
    raise err


def _fail(state, err):
    """A tern call failed: the Futures in flight complete (with their unreduced buckets, never
    to be used: backward is about to raise) and err is raised at the end of backward.

    Why not raise from the hook or fail the Futures: DDP's C++ side would turn either into a
    plain RuntimeError. An exception from an autograd engine callback reaches the caller of
    backward() as it was raised, so TernError it is."""
    for _, fut, buf in state.in_flight:
        fut.set_result(buf)
    state.in_flight.clear()
    if state.error is None:
        state.error = err
        # The raise waits for a second round of callbacks: DDP queues its own finalize (which
        # marks the reduction finished) only once the last bucket's hook has run, after this
        # one. Raised before it, the reduction stays unfinished and the next forward dies in
        # the reducer's internal assert instead of reaching tern's error again.
        engine = torch.autograd.Variable._execution_engine
        engine.queue_callback(lambda: engine.queue_callback(lambda: _raise_error(state)))


def _complete(state, count):
    """Waits for the oldest count buckets and completes their Futures."""
    try:
        while count > 0:
            req, fut, _ = state.in_flight[0]
            result = req.wait()
            state.in_flight.pop(0)
            fut.set_result(result)
            count -= 1
    except TernError as e:
        _fail(state, e)


def allreduce_hook(state, bucket):
    """DDP communication hook: the mean over ranks of the bucket's gradients, through tern.
    A tern failure raises TernError from loss.backward()."""
    fut = torch.futures.Future()
    buf = bucket.buffer()
    if len(state.in_flight) >= MAX_IN_FLIGHT:
        _complete(state, 1)
    try:
        state.in_flight.append((state.comm.iallreduce(buf, op=AVG), fut, buf))
    except TernError as e:
        state.in_flight.append((None, fut, buf))
        _fail(state, e)
    if bucket.is_last():
        _complete(state, len(state.in_flight))
    return fut


# A process group over an existing Comm (tern.init()'s), for programs that join through tern
# rather than init_process_group("tern"): the backend's own (tern/backend.py).
ProcessGroup = ProcessGroupTern
