"""kill_mid_step_backend.py: DDP over the "tern" backend (init_process_group, no comm hook: the
backend's own allreduce); rank 1 SIGKILLs itself mid-backward at step 3. Every other rank must
get tern.TernError out of backward(), and again out of the next step it tries (not torch's
internal assert of an unfinished reduction): each prints "PASS rank R ..." or "FAIL ...".
Run by kill_mid_step_backend.sh under torchrun's variables.
"""
import os
import sys

import torch
import torch.distributed as dist

import tern
from kill_mid_step import arm

VICTIM, KILL_STEP = 1, 3


def step(model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def main():
    dist.init_process_group("tern")
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    model = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.05)  # two buckets
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    at = [0]
    if rank == VICTIM:
        arm(net, at, KILL_STEP)
    x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
    seen = []
    for attempt in ("the step", "the next step"):
        try:
            while at[0] < KILL_STEP + 20:
                step(model, opt, x, y)
                at[0] += 1
        except tern.TernError as e:
            seen.append(e.status_name)
            continue
        except Exception as e:  # noqa: BLE001 - the point is to see what else came out
            say(f"FAIL rank {rank}: {attempt} gave {type(e).__name__}, not TernError: {e}")
            return 1
        say(f"FAIL rank {rank}: {attempt} went on although rank {VICTIM} was killed")
        return 1
    say(f"PASS rank {rank}: TernError {seen[0]} at step {at[0]}, then again {seen[1]}")
    os._exit(0)  # the group cannot be destroyed cleanly with a rank dead


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
