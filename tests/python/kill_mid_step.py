"""kill_mid_step.py VICTIM STEP: DDP training over tern (tern.ddp's process group and hook);
rank VICTIM SIGKILLs itself in the middle of step STEP's backward pass (from a gradient hook,
while other buckets are in flight). Every other rank must get a tern.TernError naming the loss,
not hang and not another exception, and so must the step a program that caught it tries next
(not torch's internal assert of a reduction left unfinished): each prints "PASS rank R ..." and exits 0, or "FAIL ...".
Run it under `tern run -n N`; tests/python/CMakeLists.txt checks the lines and the time.
"""
import os
import signal
import sys
import time

import torch

import tern
import tern.ddp


def arm(net, step, kill_step):
    """This process SIGKILLs itself in step kill_step's backward (step[0]), from the first
    layer's gradient hook: that gradient comes last, while other buckets are in flight."""
    def die(grad):
        if step[0] == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)
        return grad
    net[0].weight.register_hook(die)


def main():
    victim, kill_step = int(sys.argv[1]), int(sys.argv[2])
    comm = tern.init()
    torch.manual_seed(0)
    # Two buckets (bucket_cap_mb small), so that a kill can land between them.
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    model = torch.nn.parallel.DistributedDataParallel(
        net, process_group=tern.ddp.ProcessGroup(comm), bucket_cap_mb=0.05)
    model.register_comm_hook(tern.ddp.HookState(comm), tern.ddp.allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = [0]
    if comm.rank == victim:
        arm(net, step, kill_step)
    x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
    start = time.monotonic()
    try:
        for step[0] in range(kill_step + 50):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    except tern.TernError as e:
        first = f"TernError {e.status_name} at step {step[0]} after " \
                f"{time.monotonic() - start:.2f} s: {e}"
    except Exception as e:  # noqa: BLE001 - the point is to see what else came out
        say(f"FAIL rank {comm.rank}: {type(e).__name__} instead of TernError: {e}")
        return 1
    else:
        say(f"FAIL rank {comm.rank}: training went on although rank {victim} was killed")
        return 1
    # A program that caught the error and steps again must get the same clear error, not
    # torch's internal assert about a reduction left unfinished.
    try:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
    except tern.TernError as e:
        say(f"PASS rank {comm.rank}: {first}; the next step: TernError {e.status_name}")
        return 0
    except Exception as e:  # noqa: BLE001 - the point is to see what else came out
        say(f"FAIL rank {comm.rank}: the next step gave {type(e).__name__}, not TernError: {e}")
        return 1
    say(f"FAIL rank {comm.rank}: the next step went on although rank {victim} was killed")
    return 1


def say(line):
    """One write of the whole line: the ranks share one pipe, and lines must not interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
