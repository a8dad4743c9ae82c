"""test_swarm_averager.py CASE: tern.swarm.Averager over peers on 127.0.0.1.

    exact      3 peers (threads of this process, a Swarm each) average 12 tensors of float32,
               float16 and bfloat16 under all four codecs, weights 1, 2, 3, in the background:
               peer 0's round is still waiting for the others after its step() returned and its
               tensors are untouched until result(); then every tensor of every peer equals the
               exact weighted average (float64) within the codec's stated error (CODEC_ERROR,
               relative to the largest value sent) plus the rounding to the tensor's dtype
    killed     2 peers and a third process that dies for real right after matching
               (TERN_SWARM_FAULT=exit-after-match, src/swarm/butterfly.c): the survivors'
               result() raises AveragingError naming the lost member and every tensor is
               bitwise what it was
    mismatch   2 peers whose models differ in size: the round fails (tern refuses the count,
               or the other's part never comes); at least one peer raises saying why, and the
               tensors of a peer that raises are bitwise what they were
    feedback   2 peers average the same two vectors 12 times under int8: the mean of the 12
               results is nearer the exact average with error feedback than without (mean
               |error| at most 0.6 x), the residual carrying what one round's codes lost
    victim RUN BOOT   the dying peer of `killed`
"""
import os
import subprocess
import sys
import threading
import time

import torch

import tern.swarm
from tern.swarm import CODEC_ERROR, Averager, AveragingError

CODECS = ("none", "fp16", "bf16", "int8")
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
OPTS = dict(match_timeout=20, average_timeout=20)
ROUNDING = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


def model(peer, extra=0):
    """12 tensors: dtype, codec and shape vary with the index; values with the peer."""
    g = torch.Generator().manual_seed(1000 + peer)
    ts = []
    for k in range(12):
        shape = (3 + k, 17 * (k % 4) + 5 + (extra if k == 0 else 0))
        t = (torch.randn(shape, generator=g) * (k + 1) + peer).to(DTYPES[k % 3])
        ts.append(torch.nn.Parameter(t) if k % 2 else t)  # a model's parameters need grad
    return ts, [CODECS[k % 4] for k in range(12)]


def swarm(run, boot, n):
    return tern.swarm.Swarm("127.0.0.1:0", run, bootstrap=boot)


def peers(run, n):
    first = swarm(run, [], n)
    return [first] + [swarm(run, [first.address], n) for _ in range(n - 1)]


def exact():
    n, weights = 3, [1.0, 2.0, 3.0]
    sws = peers(f"avg-exact-{time.time_ns()}", n)
    models = [model(i) for i in range(n)]
    before = [[t.detach().clone() for t in m[0]] for m in models]
    avgs = [Averager(sw, m[0], compression=m[1], error_feedback=False, min_group=n,
                     target_group=n, **OPTS) for sw, m in zip(sws, models)]
    h0 = avgs[0].step(weights[0], wait=False)
    time.sleep(0.5)
    assert not h0.done(), "peer 0's round ended before the others joined it"
    assert all(torch.equal(a, b) for a, b in zip(models[0][0], before[0])), \
        "peer 0's tensors changed before result()"
    handles = [h0] + [a.step(w, wait=False) for a, w in zip(avgs[1:], weights[1:])]
    reports = [h.result(timeout=120) for h in handles]
    for i, reps in enumerate(reports):
        assert len(reps) == 4 and all(r["group_size"] == n for r in reps), f"peer {i}: {reps}"
    worst = {c: 0.0 for c in CODECS}
    for k in range(12):
        xs = [b[k].double() for b in before]
        want = sum(w * x for w, x in zip(weights, xs)) / sum(weights)
        top = max(x.abs().max().item() for x in xs)
        codec, dtype = models[0][1][k], models[0][0][k].dtype
        for i in range(n):
            got = models[i][0][k].detach().double()
            err = (got - want).abs()
            bound = CODEC_ERROR[codec] * top + ROUNDING[dtype] * want.abs()
            assert bool((err <= bound).all()), \
                f"peer {i} tensor {k} ({dtype}, {codec}): error {err.max().item():.3g} over the " \
                f"bound {bound.max().item():.3g}"
            worst[codec] = max(worst[codec], (err / top).max().item())
    for sw in sws:
        sw.leave()
    print("3 peers, 12 tensors (f32/f16/bf16), 4 codecs in 4 rounds: exact within each codec; "
          "worst error / max|x|: " + ", ".join(f"{c} {worst[c]:.2g}" for c in CODECS))


def expect_failure(handle, tensors, before, needle):
    try:
        handle.result(timeout=120)
    except AveragingError as e:
        assert needle in str(e), f"'{e}' does not say '{needle}'"
        assert all(torch.equal(a, b) for a, b in zip(tensors, before)), "a tensor changed"
        return str(e)
    raise AssertionError("the round did not fail")


def killed():
    run = f"avg-kill-{time.time_ns()}"
    sws = peers(run, 2)
    env = dict(os.environ, TERN_SWARM_FAULT="exit-after-match")
    victim = subprocess.Popen([sys.executable, __file__, "victim", run, sws[0].address], env=env)
    models = [model(i) for i in range(2)]
    before = [[t.detach().clone() for t in m[0]] for m in models]
    avgs = [Averager(sw, m[0], compression="none", min_group=3, target_group=3, **OPTS)
            for sw, m in zip(sws, models)]
    handles = [a.step(1.0, wait=False) for a in avgs]
    msgs = [expect_failure(h, m[0], b, "lost") for h, m, b in zip(handles, models, before)]
    assert victim.wait(60) == 9, f"the victim exited {victim.returncode}, not by the fault"
    for sw in sws:
        sw.leave()
    print(f"a member killed after matching: both survivors raise, tensors intact: {msgs[0]}")


def victim(run, boot):
    sw = tern.swarm.Swarm("127.0.0.1:0", run, bootstrap=[boot])
    Averager(sw, model(2)[0], min_group=3, target_group=3, **OPTS).step(1.0)
    sys.exit(0)  # not reached: the fault ends the process after matching


def mismatch():
    sws = peers(f"avg-mismatch-{time.time_ns()}", 2)
    models = [model(0), model(1, extra=1)]
    before = [[t.detach().clone() for t in m[0]] for m in models]
    avgs = [Averager(sw, m[0], min_group=2, target_group=2, **OPTS) for sw, m in zip(sws, models)]
    handles = [a.step(1.0, wait=False) for a in avgs]
    failed = 0
    for h, m, b in zip(handles, models, before):
        try:
            h.result(timeout=120)
        except AveragingError as e:
            assert ("INVALID_ARG" in str(e)) == isinstance(e.cause, tern.TernError), e
            assert all(torch.equal(x, y) for x, y in zip(m[0], b)), "a tensor changed"
            failed += 1
            msg = str(e)
        else:
            assert all(torch.equal(x, y) for x, y in zip(m[0], b)), "a lone peer's tensors moved"
    assert failed >= 1, "neither peer noticed the other's vector had another size"
    for sw in sws:
        sw.leave()
    print(f"models of two sizes: {failed} peer(s) raise, tensors intact: {msg}")


def mean_error_over_rounds(error_feedback, rounds=12, n=3000):
    """Mean |mean of the rounds' results - exact average| for two fixed vectors under int8."""
    sws = peers(f"avg-ef-{time.time_ns()}", 2)
    g = torch.Generator().manual_seed(5)
    vs = [torch.randn(n, generator=g) * torch.linspace(0.01, 1, n) for _ in range(2)]
    want = (vs[0] + vs[1]) / 2
    ts = [[v.clone()] for v in vs]
    avgs = [Averager(sw, t, compression="int8", error_feedback=error_feedback, min_group=2,
                     target_group=2, **OPTS) for sw, t in zip(sws, ts)]
    total = torch.zeros(n)
    for _ in range(rounds):
        for t, v in zip(ts, vs):
            t[0].copy_(v)
        for h in [a.step(1.0, wait=False) for a in avgs]:
            h.result(timeout=120)
        total += ts[0][0]
    for sw in sws:
        sw.leave()
    return (total / rounds - want).abs().mean().item()


def feedback():
    without, with_ef = mean_error_over_rounds(False), mean_error_over_rounds(True)
    assert with_ef <= 0.6 * without, f"int8 over 12 rounds: mean error {with_ef:.3g} with error " \
                                     f"feedback, {without:.3g} without"
    print(f"int8 over 12 rounds: mean |error| of the mean result {without:.2g} without error "
          f"feedback, {with_ef:.2g} with")


if __name__ == "__main__":
    case = sys.argv[1]
    if case == "victim":
        victim(*sys.argv[2:4])
    t0 = time.monotonic()
    {"exact": exact, "killed": killed, "mismatch": mismatch, "feedback": feedback}[case]()
    print(f"1 passed, 0 failed ({time.monotonic() - t0:.1f} s)")
    threading.Event().wait(0)
