"""tern.swarm.Optimizer: a torch optimizer whose steps a swarm takes together
(docs/SWARM_TRAINING.md).

    sw = tern.swarm.Swarm(listen, "run", bootstrap=[...])
    opt = tern.swarm.Optimizer(sw, model.parameters(), torch.optim.SGD(model.parameters(), 0.1),
                               mode="collaborative", target_batch_size=4096, expected_peers=8)
    opt.load_state_from_peers()          # a peer joining a running swarm starts where it is
    for x, y in batches:
        loss_fn(model(x), y).backward()
        opt.step(batch_size=len(x))      # takes the swarm's step when the swarm is there

Two modes:

collaborative (hivemind.Optimizer's semantics): step(batch_size) adds this batch's gradient,
times its size, to an accumulator and zeroes the parameters' gradients. Once the swarm as a
whole has processed target_batch_size samples, every peer averages its mean gradient weighted by
its samples (one tern_swarm_average round: the sample-weighted mean over the group is exactly the
mean gradient of the union of their batches) and takes one step of the wrapped optimizer: the
swarm behaves as one optimizer with a batch of the swarm's samples. Progress travels with the
rounds themselves, not through the DHT: the round's report gives the group's total weight
(weight_after x group_size, the samples of all members), and each peer's share of it sets how
many samples this peer contributes to the next epoch (share x target_batch_size), the way
hivemind extrapolates each peer's throughput; before the first round with others a peer
assumes 1 / expected_peers (a round alone changes nothing of it). A group smaller than the
largest seen (or expected_peers) is taken for a part of the swarm, its members' shares scaled
down to match, so that peers split into groups by churn keep the swarm's pace and meet again.
average_parameters (default): the round averages the parameters too, at twice the bytes, so that
groups that stepped apart under churn come back to one model; off, peers that never missed a
round hold identical parameters anyway. A peer whose share is reached enters the round and waits there (up to
match_timeout) for the others, so the epochs of the swarm stay together.

diloco (Douillard et al., 2023, "DiLoCo"; Moshpit SGD's local updates): step() runs the wrapped
(inner) optimizer; after local_steps inner steps the peers average the pseudo-gradient
theta_outer - theta (weighted by samples) and take an outer step with SGD, Nesterov momentum
(outer_lr, outer_momentum), from theta_outer; the inner optimizer's state stays local.
overlap (Streaming DiLoCo's overlapped communication, Douillard et al. 2025; a whole round's
delay is the one-step-delayed outer gradient of Kale et al. 2025): the round started at a
boundary runs in the background while the next inner steps go on, and lands after `overlap`
of them (True: a whole round, at the next boundary): the outer step is taken on its average and
the peer carries on from the new outer parameters plus the progress it made since the boundary
(the "mark"). With overlap = tau < local_steps, the pseudo-gradient of every round is measured
from the outer parameters the round's steps end up on, as without overlap; only tau steps are
taken before the outer step lands. Every peer that took part in the same rounds holds the same
outer parameters; finish() lands the last round. docs/SWARM_TRAINING.md.

Peers whose outer states went apart (without overlap): DiLoCo averages only pseudo-gradients, so
two peers whose outer parameters differ (a joiner whose download missed the rounds taken while it
loaded and began, a peer alone in a round or whose round failed while the others' did not) stay
apart for good, and a group then averages steps measured from different points. So each peer
keeps its lineage, a hash of the start and of every round it stepped on (number and averaged
bytes, which are the same for every member), and a round carries 16 bits of it beside the
pseudo-gradient (a peer without bootstrap peers, the swarm's first, with 256 times the vote of
the others). A peer whose bits differ from the round's result (from the first peer's, when that
was in the group; else from the group's majority) fetches a bootstrap peer's state, once that
holds the round, on a thread while it trains on (the download takes longer than a round on slow
links: a peer that waited for it would come to the next round late, from an older state again);
when it lands, its outer state replaces this peer's and the rounds this peer took meanwhile are
replayed on it. Until then, and in a joiner's first round, the peer's pseudo-gradient, measured
from an older outer state, is averaged with a weight of 1e-6 per sample: next to nothing.

A joiner: after each epoch every peer serves (Swarm.serve_state) its parameters, the optimizer's
state and the epoch as one float32 vector; load_state_from_peers() fills its own from a
bootstrap peer's, bit for bit (float16/bfloat16 parameters go up to float32 exactly and back).
A round that fails (AveragingError: a member lost, ...) leaves the parameters and the
accumulated gradients as they were; step() tries again in the next round, up to retries times,
then raises.
"""

import copy
import hashlib
import logging
import threading
import time

import torch

from . import TernError
from .swarm_averager import Averager, AveragingError

__all__ = ["Optimizer"]
_log = logging.getLogger("tern.swarm")
# the lineage's bits a DiLoCo round carries, the first peer's vote (above any group's size), and
# the weight, per sample, of a pseudo-gradient from an outer state that may be older than the
# round's (next to nothing: hivemind drops an out-of-sync peer's gradients too)
_CHECK_BITS, _FIRST_VOTE, _STALE_WEIGHT = 16, 256.0, 1e-6


class _CatchUp:
    """A bootstrap peer's whole state, fetched on a thread of its own (Swarm.state_fetcher) while
    the training goes on; rounds: (number, average) of the rounds this peer takes meanwhile."""

    def __init__(self, opt, round_, first_in):
        self.vector, self.round, self.error = opt.state_vector(), round_, None
        self.rounds = [(round_, [b.clone() for b in opt._buf])]
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(opt.swarm, first_in, opt.catch_up_timeout),
                         name="tern-swarm-catch-up", daemon=True).start()

    def _run(self, swarm, first_in, timeout):
        """When the first peer was in the round, until its state holds the round (its result is
        served for a moment before the state), up to timeout; else the state it has."""
        deadline, got, fetcher = time.monotonic() + timeout, False, None
        try:
            while True:
                time.sleep(0.3)
                try:
                    # one handle for every try: each join is a DHT node and a listener
                    fetcher = fetcher or swarm.state_fetcher()
                    fetcher.download_state(self.vector,
                                           timeout=max(1.0, deadline - time.monotonic()))
                    got, self.error = True, None
                    if not first_in or self.vector[-3].item() >= self.round:
                        return
                except TernError as e:
                    self.error = None if got else e
                if time.monotonic() > deadline:
                    self.error = self.error or TimeoutError(f"none in {timeout} s")
                    return
        finally:
            if fetcher is not None:
                fetcher.leave()
            self._done.set()

    def done(self):
        return self._done.is_set()


class Optimizer:
    def __init__(self, swarm, params, optimizer, mode="collaborative", target_batch_size=None,
                 expected_peers=1, local_steps=None, outer_lr=0.7, outer_momentum=0.9,
                 compression="none", retries=3, average_parameters=True, overlap=False,
                 catch_up_timeout=30.0, **average_options):
        if mode not in ("collaborative", "diloco"):
            raise ValueError(f"mode '{mode}': want 'collaborative' or 'diloco'")
        if mode == "collaborative" and not (isinstance(target_batch_size, int)
                                            and target_batch_size > 0):
            raise ValueError("collaborative: target_batch_size must be an integer > 0")
        if mode == "diloco" and not (isinstance(local_steps, int) and local_steps > 0):
            raise ValueError("diloco: local_steps must be an integer > 0")
        if overlap is True:
            overlap = local_steps
        if overlap and (mode != "diloco" or not isinstance(overlap, int)
                        or not 0 < overlap <= local_steps):
            raise ValueError(f"overlap {overlap!r}: for mode='diloco', True or 1..local_steps")
        self.swarm, self.opt, self.mode = swarm, optimizer, mode
        self.params = [p for p in params if p.requires_grad]
        self.target, self.local_steps, self.retries = target_batch_size, local_steps, retries
        self.epoch, self.samples, self.inner = 0, 0, 0
        # the last round whose step this peer's state holds; DiLoCo: its lineage (below)
        self.round, self._lineage = -1, 0
        self.share = 1.0 / max(1, int(expected_peers))
        self.last_report = None
        self._epoch_start, self._epoch_samples, self._rate = None, 0, 0.0
        self._ensure_state(self.opt)
        self._buf = [torch.zeros(p.shape, dtype=torch.float32) for p in self.params]
        self.swarm_size = max(1, int(expected_peers))
        # collaborative: the parameters ride along with the gradients (float32 copies), so that
        # groups that went apart under churn come back to one model when they meet again
        self._synced = [torch.zeros(p.shape, dtype=torch.float32) for p in self.params] \
            if mode == "collaborative" and average_parameters else []
        # DiLoCo without overlap: the lineage's bits, in the pseudo-gradient's round (its codec)
        self._check = torch.zeros(_CHECK_BITS) if mode == "diloco" and not overlap else None
        tensors = self._buf + self._synced
        if self._check is not None:
            if not isinstance(compression, str):
                codecs = [compression(t) for t in tensors] if callable(compression) \
                    else list(compression)
                compression = codecs + codecs[-1:]
            tensors = tensors + [self._check]
        self.averager = Averager(swarm, tensors, compression=compression, **average_options)
        # a catch-up under way (_CatchUp), and whether this peer's state is a download not yet
        # checked against a round (a joiner's: its download and start may span rounds)
        self.resyncs, self._catch_up, self._unchecked = 0, None, False
        if mode == "diloco":
            self._outer_params = [p.detach().clone() for p in self.params]
            self.outer = torch.optim.SGD(self.params, lr=outer_lr, momentum=outer_momentum,
                                         nesterov=True)
            self._ensure_state(self.outer)
            self._lineage = self._hash(b"start", self._outer_params)
        # overlap: inner steps after a boundary when its round lands (0: none); the round under
        # way, its weight, the parameters at the boundary (the mark), and whether a loaded state
        # lacks a round that was in flight when it was served
        self.overlap, self.catch_up_timeout = int(overlap or 0), catch_up_timeout
        self._pending, self._pending_weight, self._stale = None, 0.0, False
        self._mark = [p.detach().float().clone() for p in self.params] if self.overlap else []
        self.serve()

    # ---- state: parameters, optimizer state, epoch as one float32 vector ----------------------

    def _ensure_state(self, opt):
        """Creates opt's per-parameter state as a first step would, then puts back the parameters
        and zeroes the state, so that every peer's state has the same layout from the start (a
        joiner's included). Zero moments and step 0 are what torch's SGD (dampening 0) and Adam
        start from, so later steps are the same as from an empty state."""
        saved = [p.detach().clone() for p in self.params]
        grads = [p.grad for p in self.params]
        for p in self.params:
            p.grad = torch.zeros_like(p)
        opt.step()
        with torch.no_grad():
            for p, s, g in zip(self.params, saved, grads):
                p.copy_(s)
                p.grad = g
        for st in opt.state.values():
            for k, v in st.items():
                if torch.is_tensor(v):
                    v.zero_()
                elif isinstance(v, (int, float)):
                    st[k] = type(v)(0)

    def outer_params(self):
        """DiLoCo: the outer (the swarm's) parameters, which the inner steps start from."""
        return self._outer_params

    def _optimizers(self):
        return [self.opt] + ([self.outer] if self.mode == "diloco" else [])

    def _state_parts(self):
        """(tensor, or (state dict, key) for a Python number) in a fixed order."""
        parts = list(self.params) + (self._outer_params if self.mode == "diloco" else [])
        for opt in self._optimizers():
            for group in opt.param_groups:
                for p in group["params"]:
                    st = opt.state[p]
                    for k in sorted(st):
                        if torch.is_tensor(st[k]):
                            parts.append(st[k])
                        elif isinstance(st[k], (int, float)):
                            parts.append((st, k))
        return parts

    def state_vector(self):
        vals = []
        for part in self._state_parts():
            if isinstance(part, tuple):
                vals.append(torch.tensor([float(part[0][part[1]])]))
            else:
                vals.append(part.detach().reshape(-1).to(torch.float32))
        # the lineage as 4 chunks of 16 bits (exact in float32), the round, the epoch, the step
        vals.append(torch.tensor([float(self._lineage >> (16 * k) & 0xFFFF) for k in range(4)]
                                 + [float(self.round), float(self.epoch), float(self.inner)]))
        return torch.cat(vals)

    def load_state_vector(self, v):
        o = 0
        with torch.no_grad():
            for part in self._state_parts():
                if isinstance(part, tuple):
                    st, k = part
                    st[k] = type(st[k])(v[o].item())
                    o += 1
                else:
                    part.copy_(v[o:o + part.numel()].view(part.shape))
                    o += part.numel()
        if o + 7 != v.numel():
            raise ValueError(f"state of {v.numel()} values, this optimizer's has {o + 7}")
        tail = [int(x) for x in v[o:].tolist()]
        self._lineage = sum(c << (16 * k) for k, c in enumerate(tail[:4]))
        self.round, self.epoch, self.inner = tail[4:]

    def serve(self):
        """After each epoch: the state joiners download, and the progress `tern swarm status`
        lists (this peer's samples per second since its previous epoch)."""
        self.swarm.serve_state(self.state_vector())
        now = time.time()
        if self._epoch_start is not None:
            self._rate = self._epoch_samples / max(now - self._epoch_start, 1e-9)
        self._epoch_start, self._epoch_samples = now, 0
        self.swarm.publish_status(self.epoch, self._rate)

    def load_state_from_peers(self, timeout=30.0):
        """For a peer joining a running swarm: takes a bootstrap peer's parameters, optimizer
        state and epoch (bit for bit) and starts there."""
        v = self.state_vector()
        self.swarm.download_state(v, timeout=timeout)
        self.load_state_vector(v)
        for b in self._buf:
            b.zero_()
        self.samples = 0
        self._unchecked = self._check is not None
        if self.overlap:
            self._set_mark()
            # the donor's outer parameters lack the round it had in flight: when that round
            # lands, this peer takes the outer state again, once the donor has served it
            self._stale = not self._landed(self.epoch, self.inner)
        self.serve()

    # ---- steps ------------------------------------------------------------------------------

    def step(self, batch_size):
        """After backward() of a batch of batch_size samples. Returns True when this call took
        a swarm step (the epoch advanced)."""
        self._epoch_samples += batch_size
        if self.mode == "collaborative":
            return self._collaborative(batch_size)
        return self._diloco(batch_size)

    def _average(self, weight):
        """One averaging round of self._buf, tried again on failure; the last report."""
        for attempt in range(self.retries + 1):
            try:
                reps = self.averager.step(weight)
                return reps[-1]
            except AveragingError as e:
                if attempt == self.retries:
                    raise
                _log.warning("tern.swarm.Optimizer epoch %d: %s; trying again", self.epoch, e)
        raise AssertionError("unreachable")

    def _collaborative(self, batch_size):
        with torch.no_grad():
            for b, p in zip(self._buf, self.params):
                if p.grad is not None:
                    b.add_(p.grad.float(), alpha=batch_size)
                    p.grad.zero_()
        self.samples += batch_size
        if self.samples < self.share * self.target:
            return False
        with torch.no_grad():
            for b in self._buf:
                b.div_(self.samples)
            for c, p in zip(self._synced, self.params):
                c.copy_(p)
        try:
            rep = self._average(float(self.samples))
        except AveragingError:
            with torch.no_grad():
                for b in self._buf:
                    b.mul_(self.samples)
            raise
        total = rep["weight_after"] * rep["group_size"]
        self.swarm_size = max(self.swarm_size, rep["group_size"])
        if rep["group_size"] > 1:  # alone, a peer learns nothing of the swarm's pace
            # its share of the group's samples, the group a part of the swarm as it has seen it
            self.share = min(1.0, self.samples / total * rep["group_size"] / self.swarm_size)
        with torch.no_grad():
            for c, p in zip(self._synced, self.params):
                p.copy_(c)
            for b, p in zip(self._buf, self.params):
                p.grad = b.to(p.dtype).clone()
        self.opt.step()
        for p in self.params:
            p.grad = None
        for b in self._buf:
            b.zero_()
        self.last_report = dict(rep, swarm_samples=total, time=time.time())
        self.round = rep["round"]
        self.samples = 0
        self.epoch += 1
        self.serve()
        return True

    def _diloco(self, batch_size):
        self.opt.step()
        self.samples += batch_size
        self.inner += 1
        if self._catch_up is not None and self._catch_up.done():
            self._catch_up_lands()
        if self.overlap and self.inner == self.overlap and self.overlap < self.local_steps:
            error = self._land()
            # what a joiner downloads from now on holds this round (_take_outer_state)
            self.swarm.serve_state(self.state_vector())
            if error is not None:
                raise error
        if self.inner < self.local_steps:
            return False
        if self.overlap:
            return self._diloco_overlapped()
        with torch.no_grad():
            for b, p, o in zip(self._buf, self.params, self._outer_params):
                b.copy_(o.float() - p.float())
        mine = self._lineage_bits()
        self._check.copy_(mine)
        # from an outer state that may be older than the round's: it takes part (to learn whether
        # it is apart, and to have the round's average to replay) but its step counts for nothing
        stale = self._unchecked or self._catch_up is not None
        rep = self._average(float(self.samples) * (_STALE_WEIGHT if stale else 1.0))
        self._unchecked = False
        self._outer_step(self._buf, rep["round"])
        self.last_report = dict(rep, swarm_samples=rep["weight_after"] * rep["group_size"],
                                time=time.time())
        self.samples, self.inner = 0, 0
        self.epoch += 1
        if self._catch_up is not None:  # replayed on the fetched state when it lands
            self._catch_up.rounds.append((rep["round"], [b.clone() for b in self._buf]))
        elif self.swarm.bootstrap and not torch.equal(self._check.sign(), mine.sign()):
            self._catch_up = _CatchUp(self, rep["round"], bool(self._check.abs().min() > 1))
        self.serve()
        return True

    # ---- DiLoCo: peers whose outer states went apart come back to one -----------------------

    def _hash(self, head, tensors):
        """A 64-bit hash of head and the tensors' bytes."""
        h = hashlib.blake2b(head, digest_size=8)
        for t in tensors:
            h.update(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy())
        return int.from_bytes(h.digest(), "little")

    def _lineage_bits(self):
        """The lineage's first _CHECK_BITS bits as +-1 (+-_FIRST_VOTE on the first peer)."""
        vote = _FIRST_VOTE if not self.swarm.bootstrap else 1.0
        return torch.tensor([vote if self._lineage >> k & 1 else -vote
                             for k in range(_CHECK_BITS)])

    def _catch_up_lands(self):
        """A bootstrap peer's state, fetched while this peer trained on, replaces its outer state
        (parameters, momentum, lineage, round, epoch); the rounds this peer took since, which the
        fetched state does not hold, are replayed on it (their averages are the same bytes for
        every member); its own inner optimizer and the progress since its last boundary stay."""
        job, self._catch_up = self._catch_up, None
        if job.error is not None:
            _log.warning("tern.swarm.Optimizer epoch %d: the outer state differs from round "
                         "%d's group and no bootstrap peer's came (%s); kept", self.epoch,
                         job.round, job.error)
            return
        since = [p.detach().float() - o.float() for p, o in zip(self.params, self._outer_params)]
        inner, state = self.inner, copy.deepcopy(self.opt.state_dict())
        self.load_state_vector(job.vector)
        self.opt.load_state_dict(state)
        fetched, replayed = self.round, [r for r, _ in job.rounds if r > self.round]
        for r, avg in job.rounds:
            if r > fetched:
                self._outer_step(avg, r)
                self.epoch += 1
        self.inner = inner
        with torch.no_grad():
            for p, o, d in zip(self.params, self._outer_params, since):
                p.copy_((o.float() + d).to(p.dtype))
        self.resyncs += 1
        _log.warning("tern.swarm.Optimizer: the outer state differed from round %d's group; took "
                     "a bootstrap peer's of round %d and replayed rounds %s on it", job.round,
                     fetched, replayed)

    # ---- DiLoCo with the outer round overlapping the next inner steps ----------------------------

    def _set_mark(self):
        with torch.no_grad():
            for r, p in zip(self._mark, self.params):
                r.copy_(p)

    def _landed(self, epoch, inner):
        """Whether a state served at (epoch, inner) holds the round its epoch started."""
        return self.overlap < self.local_steps and inner >= self.overlap

    def _outer_step(self, avg, round_):
        """theta_outer <- the outer optimizer's step on the averaged pseudo-gradient avg, the
        average of round round_ (its bytes, the same for every member, go into the lineage)."""
        self.round = round_
        self._lineage = self._hash(self._lineage.to_bytes(8, "little")
                                   + round_.to_bytes(4, "little"), avg)
        with torch.no_grad():
            for a, p, o in zip(avg, self.params, self._outer_params):
                p.copy_(o)
                p.grad = a.to(p.dtype).clone()
        self.outer.step()
        with torch.no_grad():
            for p, o in zip(self.params, self._outer_params):
                p.grad = None
                o.copy_(p)

    def _collect(self):
        """The round started at the last boundary: its report, once self._buf holds the
        average. A round that failed is averaged again, blocking (the other survivors of its
        group fail at the same round and meet here), up to retries times, then AveragingError
        (no outer step for it); so also when the round averaged again had no one else in it
        (the others had taken the round), rather than an outer step on this peer's delta alone."""
        pending, self._pending = self._pending, None
        try:
            return pending.result()[-1]
        except AveragingError as e:
            if self.retries == 0:
                raise
            _log.warning("tern.swarm.Optimizer epoch %d: %s; averaging it again", self.epoch, e)
            rep = self._average(self._pending_weight)
            if rep["group_size"] < 2:  # the others took that round: alone it would step apart
                raise AveragingError(f"round {rep['round']}: averaged again, but alone; its "
                                     f"progress goes into the next round", report=rep) from e
            return rep

    def _take_outer_state(self, timeout):
        """A joiner, where the round in flight at its download lands: the donor's outer
        parameters and momentum once it has served a state that holds that round; this peer's
        own parameters, inner state and step count kept. False when none came within timeout."""
        v = self.state_vector()
        epoch, inner = self.epoch, self.inner
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.swarm.download_state(v, timeout=max(1.0, deadline - time.monotonic()))
                e, i = int(v[-2].item()), int(v[-1].item())
                if e > epoch or (e == epoch and self._landed(e, i)):
                    break
            except TernError as e:
                _log.warning("tern.swarm.Optimizer: no state from the bootstrap peers: %s", e)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        mine = [p.detach().clone() for p in self.params]
        state = copy.deepcopy(self.opt.state_dict())
        self.load_state_vector(v)
        self.epoch, self.inner = epoch, inner
        self.opt.load_state_dict(state)
        with torch.no_grad():
            for p, m in zip(self.params, mine):
                p.copy_(m)
        return True

    def _land(self):
        """The round started at the last boundary lands: the outer step on its average, and the
        parameters become the new outer ones plus what this peer did since the boundary. A
        joiner whose state lacked that round takes the outer state from a peer instead. A round
        that failed for good: no outer step (the parameters stay), AveragingError."""
        with torch.no_grad():
            since = [p.float() - m for p, m in zip(self.params, self._mark)]
        error = None
        if self._pending is not None:
            try:
                rep = self._collect()
                self._outer_step(self._buf, rep["round"])
                self.last_report = dict(rep, time=time.time(),
                                        swarm_samples=rep["weight_after"] * rep["group_size"])
            except AveragingError as e:  # that round's outer step is lost
                error = e
        elif self._stale:
            if not self._take_outer_state(self.catch_up_timeout):
                _log.warning("tern.swarm.Optimizer epoch %d: no peer served the state with the "
                             "round in flight within %g s; this peer's outer parameters lack it",
                             self.epoch, self.catch_up_timeout)
        self._stale = False
        if error is None:
            with torch.no_grad():
                for p, o, d in zip(self.params, self._outer_params, since):
                    p.copy_((o.float() + d).to(p.dtype))
        return error

    def _diloco_overlapped(self):
        error = self._land() if self.overlap == self.local_steps else None
        with torch.no_grad():  # this round's pseudo-gradient, as without overlap
            for b, p, o in zip(self._buf, self.params, self._outer_params):
                b.copy_(o.float() - p.float())
        self._set_mark()
        weight = float(self.samples)
        self.samples, self.inner = 0, 0
        self.epoch += 1
        self.serve()  # between rounds: never while the averager's thread uses the swarm
        self._pending_weight = weight
        self._pending = self.averager.step(weight, wait=False)
        if error is not None:
            raise error
        return True

    def finish(self, timeout=None):
        """overlap: lands the round still under way (its outer step), and puts the outer
        parameters in the model, so that it holds every round (call it after the last step,
        before saving the model). Without overlap: lands a catch-up still under way (the outer
        state of a bootstrap peer, fetched after a round that found this peer's apart). Returns
        the round's report, or None."""
        if self._catch_up is not None:
            if not self._catch_up._done.wait(timeout):
                raise TimeoutError(f"the outer state's catch-up is still under way after "
                                   f"{timeout} s")
            self._catch_up_lands()
        if self._pending is None:
            return None
        if timeout is not None and not self._pending._done.wait(timeout):
            raise TimeoutError(f"the swarm round is still under way after {timeout} s")
        error = self._land()
        if error is not None:
            raise error
        with torch.no_grad():
            for p, o in zip(self.params, self._outer_params):
                p.copy_(o)
        self._set_mark()
        return self.last_report
