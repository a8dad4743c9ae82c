"""tern.swarm.Averager: a model's tensors averaged over a swarm, in place, in the background
(docs/SWARM_TRAINING.md).

    sw = tern.swarm.Swarm("10.0.0.5:7000", "run", bootstrap=[...])
    avg = tern.swarm.Averager(sw, list(model.parameters()), compression="fp16")
    handle = avg.step(weight=samples, wait=False)   # matching and all-reduce on a thread
    ...                                             # the training step goes on
    reports = handle.result()                       # the average lands in the tensors here

Tensors of float32, float16 and bfloat16 (CPU, contiguous) are gathered into one float32 bucket
per codec (the upcast is exact), and each bucket is one tern_swarm_average call: all tensors
sharing a codec are averaged in one round, and a model with one codec costs one round per step.
The codec is chosen per tensor ("none", "fp16", "bf16", "int8"); int8 carries error feedback: the
part of this peer's contribution that blockwise int8 cannot say (blocks of 256 along the tensor,
scale max|x| / 127, as tern's codec) is added to its next contribution, so a delta averaged
round after round loses nothing on the whole.

The tensors are read when step() is called and written only when the caller collects the
result (handle.result(), on the caller's thread, so never while the training step uses them). A
round that fails, or whose group lost a member before every part of the vector came back
averaged, raises AveragingError naming the cause and leaves every tensor as it was.
"""

import threading

import torch

from . import TernError
from . import swarm as _swarm

__all__ = ["Averager", "AveragingError", "CODEC_ERROR"]

# What each codec on the wire is stated to cost, as a bound on |result - exact average| relative
# to the largest |value| any peer sent (docs/SWARM_TRAINING.md): a value is rounded twice, once
# as a contribution and once as the averaged part that comes back. fp16 and bf16 round to
# nearest (half an ulp: 2^-11 and 2^-8 relative); int8 rounds to half a step of max|block| / 127.
CODEC_ERROR = {"none": 2.0 ** -22, "fp16": 2 * 2.0 ** -11, "bf16": 2 * 2.0 ** -8,
               "int8": 2 * 0.5 / 127}
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_INT8_BLOCK = 256


class AveragingError(RuntimeError):
    """A round that did not average every part of the vector; the tensors are unchanged.
    cause: the TernError from tern, or None when the round ended with members lost (report)."""

    def __init__(self, message, cause=None, report=None):
        super().__init__(message)
        self.cause, self.report = cause, report


def int8_roundtrip(x):
    """x (a float32 1-D tensor) as blockwise int8 would say it: blocks of 256 values, each
    scaled by its max |value| / 127 and rounded to nearest."""
    n = x.numel()
    pad = (-n) % _INT8_BLOCK
    b = torch.cat([x, x.new_zeros(pad)]).view(-1, _INT8_BLOCK)
    scale = b.abs().amax(dim=1, keepdim=True) / 127
    q = torch.where(scale > 0, torch.round(b / torch.where(scale > 0, scale, torch.ones_like(scale)))
                    * scale, torch.zeros_like(b))
    return q.view(-1)[:n]


class _Bucket:
    """The tensors of one codec, laid end to end in one float32 vector."""

    def __init__(self, codec, members):
        self.codec, self.members = codec, members  # members: [(index, tensor, offset)]
        self.flat = torch.empty(sum(t.numel() for _, t, _ in members), dtype=torch.float32)
        self.residual = torch.zeros_like(self.flat) if codec == "int8" else None

    @torch.no_grad()
    def gather(self, error_feedback):
        """Copies the tensors in (and, for int8 with error feedback, adds the residual and keeps
        what int8 will not say of the sum); returns the snapshot the round started from."""
        for _, t, o in self.members:
            self.flat[o:o + t.numel()].copy_(t.reshape(-1))
        snapshot = self.flat.clone()
        self.residual_before = None if self.residual is None else self.residual.clone()
        if self.residual is not None and error_feedback:
            self.flat += self.residual
            for _, t, o in self.members:
                v = self.flat[o:o + t.numel()]
                self.residual[o:o + t.numel()] = v - int8_roundtrip(v)
        return snapshot

    def undo(self):
        """A failed round: the residual goes back to what it was before the round."""
        if self.residual is not None:
            self.residual.copy_(self.residual_before)

    @torch.no_grad()
    def scatter(self, result, snapshot, keep_local_progress):
        for _, t, o in self.members:
            r = result[o:o + t.numel()].view(t.shape)
            if keep_local_progress:
                t.add_((r - snapshot[o:o + t.numel()].view(t.shape)).to(t.dtype))
            else:
                t.copy_(r)


class AveragingRound:
    """One step of an Averager under way; result() waits for it and applies it."""

    def __init__(self, averager, snapshots, keep_local_progress):
        self._avg, self._snapshots, self._keep = averager, snapshots, keep_local_progress
        self._done = threading.Event()
        self._reports, self._error, self._collected = [], None, False
        self._thread = threading.Thread(target=self._run, name="tern-swarm-averager", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            for b in self._avg._buckets:
                _, rep = self._avg.swarm.average(b.flat, self._avg._weight, compress=b.codec,
                                                 **self._avg._options)
                self._reports.append(rep)
                # a member lost after every part came back is no failure: each part's result
                # is the same bytes for every member that got it (docs/SWARM.md, "Faults"), so
                # rejecting it would leave this peer apart from the members that kept it
                if rep["parts_updated"] < rep["group_size"]:
                    self._error = AveragingError(
                        f"tern swarm round {rep['round']}: {rep['failed_count']} member(s) of a "
                        f"group of {rep['group_size']} lost (ids "
                        f"{', '.join(f'{i:016x}' for i in rep['failed'])}), "
                        f"{rep['parts_updated']} of {rep['group_size']} parts averaged; the "
                        f"tensors are unchanged", report=rep)
                    return
        except TernError as e:
            self._error = AveragingError(f"tern swarm round failed: {e}; the tensors are "
                                         f"unchanged", cause=e)
        except Exception as e:  # noqa: BLE001 - reported to the caller, never lost on a thread
            self._error = AveragingError(f"swarm averaging failed: {e!r}", cause=e)
        finally:
            self._done.set()

    def done(self):
        return self._done.is_set()

    def result(self, timeout=None):
        """Waits (at most timeout seconds: TimeoutError) for the round; writes the average into
        the tensors and returns the rounds' reports (one per codec), or raises AveragingError
        with the tensors as they were."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"the swarm round is still under way after {timeout} s")
        self._thread.join()
        self._avg._pending = None
        if self._error is not None:
            for b in self._avg._buckets:
                b.undo()
            raise self._error
        if not self._collected:
            self._collected = True
            for b, snap in zip(self._avg._buckets, self._snapshots):
                b.scatter(b.flat, snap, self._keep)
        return self._reports


class Averager:
    """Averages tensors (float32, float16, bfloat16; CPU, contiguous) with a swarm's groups.

    swarm: a tern.swarm.Swarm, used only by this averager while a round is under way.
    compression: one codec for all ("none", "fp16", "bf16", "int8"), a list of one per tensor,
    or a function tensor -> codec. error_feedback: carry int8's residual to the next round (for
    deltas such as gradients; a parameter averaged in place wants it off). options: the rounds'
    options of Swarm.average (min_group, target_group, match_timeout, average_timeout, ...).
    """

    def __init__(self, swarm, tensors, compression="none", error_feedback=True, **options):
        self.swarm, self._options, self._ef = swarm, options, error_feedback
        self.tensors = list(tensors)
        if not self.tensors:
            raise ValueError("Averager: no tensors")
        codecs = self._codecs(compression)
        groups = {}
        for i, (t, c) in enumerate(zip(self.tensors, codecs)):
            if not isinstance(t, torch.Tensor) or t.dtype not in _DTYPES:
                raise TypeError(f"tensor {i}: want a float32, float16 or bfloat16 torch tensor, "
                                f"not {getattr(t, 'dtype', type(t).__name__)}")
            if t.device.type != "cpu" or not t.is_contiguous() or t.numel() == 0:
                raise ValueError(f"tensor {i}: want a non-empty contiguous CPU tensor")
            members = groups.setdefault(c, [])
            members.append((i, t, sum(m.numel() for _, m, _ in members)))
        self._buckets = [_Bucket(c, groups[c]) for c in _swarm.COMPRESS if c in groups]
        self._pending, self._weight = None, 1.0

    def _codecs(self, compression):
        n = len(self.tensors)
        if callable(compression):
            codecs = [compression(t) for t in self.tensors]
        elif isinstance(compression, str):
            codecs = [compression] * n
        else:
            codecs = list(compression)
            if len(codecs) != n:
                raise ValueError(f"compression: {len(codecs)} codecs for {n} tensors")
        for i, c in enumerate(codecs):
            if c not in _swarm.COMPRESS:
                raise ValueError(f"tensor {i}: codec '{c}', want one of "
                                 f"{', '.join(_swarm.COMPRESS)}")
        return codecs

    def step(self, weight=1.0, wait=True, keep_local_progress=False, timeout=None):
        """Averages the tensors with this round's group, weighted by weight (> 0). wait=True:
        returns the reports once the tensors hold the average. wait=False: returns an
        AveragingRound at once (the tensors were read); its result() applies the average.
        keep_local_progress: apply avg - snapshot (what the round changed) instead of avg, so
        updates made to the tensors while the round ran are kept."""
        if self._pending is not None:
            raise RuntimeError("Averager.step: the previous round was not collected (result())")
        if not (isinstance(weight, (int, float)) and weight > 0):
            raise ValueError(f"weight {weight!r}: want a number > 0")
        self._weight = float(weight)
        snaps = [b.gather(self._ef) for b in self._buckets]
        self._pending = AveragingRound(self, snaps, keep_local_progress)
        return self._pending.result(timeout) if wait else self._pending
