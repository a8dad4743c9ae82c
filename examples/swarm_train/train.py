"""train.py: one peer (or rank) training lm.py's language model; README.md shows the runs.

    ddp:           TERN_RANK/TERN_WORLD_SIZE/TERN_STORE (tern run, or by hand): every step
                   averages the gradients with tern.Comm.allreduce (AVG) and steps Adam
    collaborative: tern.swarm.Optimizer(mode="collaborative") over Adam
    diloco:        tern.swarm.Optimizer(mode="diloco"): Adam inside, Nesterov SGD outside

Every peer stops at --until (a Unix time shared by the run), or --seconds after the training's
start (every peer loaded and in: the broadcast, or the swarm's start round). A peer with --out saves snapshots
(Snapshots); every peer prints a progress line per epoch (swarm) or per 20 steps (ddp) on
stderr.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm  # noqa: E402

import tern  # noqa: E402
import tern.swarm  # noqa: E402


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("ddp", "collaborative", "diloco"), required=True)
    p.add_argument("--listen"), p.add_argument("--join", action="append", default=[])
    p.add_argument("--run-id", default="swarm-train")
    p.add_argument("--seed", type=int, default=0, help="this peer's data order")
    p.add_argument("--coord", type=int, default=0, help="this peer's place, 0..peers-1")
    p.add_argument("--model", choices=("transformer", "mlp"), default="transformer",
                   help="lm.py's LM (1.04 M parameters) or MLP (gradients large against compute)")
    p.add_argument("--width", type=int, default=1024, help="the MLP's hidden width")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--target-batch", type=int, default=64)
    p.add_argument("--peers", type=int, default=8, help="peers expected (first epoch's share)")
    p.add_argument("--local-steps", type=int, default=20)
    p.add_argument("--outer-lr", type=float, default=0.7)
    p.add_argument("--outer-momentum", type=float, default=0.9)
    p.add_argument("--compress", default="none")
    p.add_argument("--overlap", type=int, nargs="?", const=0, default=None,
                   help="diloco: the outer round in the background, landing after N of the "
                        "next inner steps (no N: at the next boundary)")
    p.add_argument("--match-timeout", type=float,
                   help="seconds a round waits for the others (default: collaborative 8, its "
                        "rounds come often and a slow peer takes the next; diloco 30, its rounds "
                        "are rare and one without the slow peers costs more than the wait)")
    p.add_argument("--t0", type=float, default=time.time())
    p.add_argument("--until", type=float, required=True)
    p.add_argument("--seconds", type=float,
                   help="train this long after the start (every peer in), --until at most")
    p.add_argument("--every", type=float, default=15.0, help="seconds between snapshots")
    p.add_argument("--late", action="store_true", help="a joiner: load the swarm's state first")
    p.add_argument("--out", help="snapshots' directory (one peer gives it)")
    return p.parse_args()


class Snapshots:
    """Every --every seconds, the model (DiLoCo: the outer parameters) to --out/snap-T.pt, T the
    seconds since --t0: evaluate.py scores them after the run, so that evaluating costs the
    run no time."""

    def __init__(self, a, params):
        self.a, self.params, self.next = a, params, time.time()
        if a.out:
            os.makedirs(a.out, exist_ok=True)

    def started(self):
        """Training starts (every peer loaded, the start round or broadcast done): OUT/start
        holds the seconds since --t0, from which the runs' times are counted (bench.sh)."""
        if self.a.out:
            with open(os.path.join(self.a.out, "start"), "w") as f:
                f.write(f"{time.time() - self.a.t0:.3f}\n")
        if self.a.seconds and not self.a.late:
            self.a.until = min(self.a.until, time.time() + self.a.seconds)
        self.due(0, force=True)

    def due(self, epoch, force=False):
        if not self.a.out or (time.time() < self.next and not force):
            return
        self.next = time.time() + self.a.every
        t = time.time() - self.a.t0
        torch.save({"t": t, "epoch": epoch, "model": self.a.model, "width": self.a.width,
                    "params": [p.detach().clone() for p in self.params]},
                   os.path.join(self.a.out, f"snap-{t:08.2f}.pt"))


def ddp(a, model, train):
    comm = tern.Comm()
    if comm.rank != 0:  # the ranks hold one model: rank 0 alone keeps its snapshots
        a.out = None
    ev = Snapshots(a, list(model.parameters()))
    opt = torch.optim.Adam(model.parameters(), a.lr)
    params = list(model.parameters())
    flat = torch.zeros(sum(p.numel() for p in params))
    with torch.no_grad():  # one start for all ranks
        for p in params:
            comm.broadcast(p.data)
    gen = torch.Generator().manual_seed(1000 + comm.rank)
    step, in_allreduce, computing = 0, 0.0, 0.0
    ev.started()
    while time.time() < a.until:
        t_compute = time.time()
        x, y = lm.batch(train, a.batch, gen)
        opt.zero_grad()
        model.loss(x, y).backward()
        computing += time.time() - t_compute
        o = 0
        for p in params:
            flat[o:o + p.numel()] = p.grad.reshape(-1)
            o += p.numel()
        t_ar = time.time()
        try:
            comm.allreduce(flat, op="avg")
        except tern.TernError as e:  # a rank died: DDP cannot go on without it
            print(f"rank {comm.rank} stopped at step {step} t {time.time() - a.t0:.1f}: {e}",
                  file=sys.stderr, flush=True)
            ev.due(step, force=True)
            sys.exit(3)
        in_allreduce += time.time() - t_ar
        o = 0
        for p in params:
            p.grad.copy_(flat[o:o + p.numel()].view(p.shape))
            o += p.numel()
        t_compute = time.time()
        opt.step()
        computing += time.time() - t_compute
        step += 1
        if step % 5 == 0:  # the allreduce's time includes waiting for the slowest rank
            print(f"rank {comm.rank} step {step} t {time.time() - a.t0:.1f} in allreduce "
                  f"{in_allreduce:.1f} s computing {computing:.1f} s", file=sys.stderr,
                  flush=True)
        ev.due(step)
    ev.due(step, force=True)
    comm.close()


def swarm(a, model, train):
    # One line of --peers places: a round's group closes as soon as every place is in.
    sw = tern.swarm.Swarm(a.listen, a.run_id, bootstrap=a.join, grid=(a.peers,),
                          coords=(a.coord,))
    inner = torch.optim.Adam(model.parameters(), a.lr)
    mode = dict(mode="collaborative", target_batch_size=a.target_batch, expected_peers=a.peers) \
        if a.mode == "collaborative" else dict(mode="diloco", local_steps=a.local_steps,
                                               outer_lr=a.outer_lr,
                                               outer_momentum=a.outer_momentum,
                                               overlap=False if a.overlap is None
                                               else a.overlap or True)
    opt = tern.swarm.Optimizer(sw, model.parameters(), inner, compression=a.compress,
                               min_group=2, target_group=a.peers,
                               match_timeout=a.match_timeout or (30 if a.mode == "diloco" else 8),
                               average_timeout=30, **mode)
    ev = Snapshots(a, opt.outer_params() if a.mode == "diloco" else list(model.parameters()))
    if a.late:
        opt.load_state_from_peers()
        print(f"joined at epoch {opt.epoch}", file=sys.stderr, flush=True)
    else:  # the run's peers start together: one round of all of them (they load for seconds)
        _, r = sw.average(torch.zeros(1), 1.0, min_group=a.peers, target_group=a.peers,
                          match_timeout=120)
        print(f"start round {r['round']} group {r['group_size']} matching "
              f"{r['seconds_matching']:.2f} s", file=sys.stderr, flush=True)
        ev.started()
    gen = torch.Generator().manual_seed(1000 + a.seed)
    last = time.time()
    # seconds in the forward, backward and the inner steps that are not a boundary's (a
    # boundary's step() is counted whole in its "boundary" figure), since the last epoch line
    computing, steps = 0.0, 0
    while time.time() < a.until:
        t_compute = time.time()
        x, y = lm.batch(train, a.batch, gen)
        inner.zero_grad()
        model.loss(x, y).backward()
        t_step = time.time()
        computing += t_step - t_compute
        steps += 1
        try:
            stepped = opt.step(len(x))
        except tern.swarm.AveragingError as e:
            print(f"epoch {opt.epoch}: {e}", file=sys.stderr, flush=True)
            continue
        if not stepped:
            computing += time.time() - t_step
        else:
            now = time.time()
            # overlap: the report is of the round collected now, started one epoch earlier
            r = opt.last_report or dict(group_size=0, swarm_samples=0, seconds_matching=0,
                                        seconds_averaging=0)
            print(f"epoch {opt.epoch} t {now - a.t0:.1f} group {r['group_size']} swarm samples "
                  f"{r['swarm_samples']:.0f} ({r['swarm_samples'] / (now - last):.1f}/s) "
                  f"averaging {r['seconds_matching']:.2f}+{r['seconds_averaging']:.2f} s "
                  f"boundary {time.time() - t_step:.2f} s computing {computing:.2f} s in {steps} "
                  f"steps", file=sys.stderr, flush=True)
            last, computing, steps = now, 0.0, 0
            ev.due(opt.epoch)
    try:  # overlap: the last round's outer step, so that the final snapshot holds it
        opt.finish(timeout=60)
    except (tern.swarm.AveragingError, TimeoutError) as e:
        print(f"finish: {e}", file=sys.stderr, flush=True)
    ev.due(opt.epoch, force=True)
    sw.leave()


def main():
    a = args()
    torch.set_num_threads(1)
    torch.manual_seed(0)  # every peer starts from the same model
    model = lm.make(a.model, a.width)
    train, _ = lm.split(lm.text_bytes())
    (ddp if a.mode == "ddp" else swarm)(a, model, train)


if __name__ == "__main__":
    main()
