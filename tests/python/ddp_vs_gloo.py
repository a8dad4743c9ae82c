"""ddp_vs_gloo.py N TERN: the same small model, the same data, the same 20 steps on N ranks,
once with Gloo (torch's own spawn, 127.0.0.1) and once with tern's DDP process group and hook
(`TERN run -n N`), must end with the same parameters: for each parameter tensor,
max |tern - gloo| <= 1e-6 x max |gloo|. (Per tensor and not per element: the ranks sum in
different orders, Gloo's ring against tern's schedule, and an element near zero can differ by a
larger fraction of itself while sitting at 1e-7 of its tensor's scale.) Also: every rank of each
run ends bit-identical to its rank 0, and the loss fell. Prints "3 passed, 0 failed" or fails.
"""
import os
import subprocess
import sys
import tempfile
import time

import torch

RTOL = 1e-6
HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, what):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=150, text=True)
    print(f"{what}: exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    if p.returncode != 0:
        print(p.stdout)
        sys.exit(f"FAIL: {what} exited {p.returncode}")


def load(outdir, backend, n):
    ranks = [torch.load(os.path.join(outdir, f"{backend}.rank{r}.pt")) for r in range(n)]
    for r in range(1, n):
        for a, b in zip(ranks[0]["params"], ranks[r]["params"]):
            assert torch.equal(a, b), f"{backend}: rank {r}'s parameters differ from rank 0's"
    return ranks[0]


def main():
    n, tern_cmd = int(sys.argv[1]), sys.argv[2]
    prog = os.path.join(HERE, "ddp_train.py")
    with tempfile.TemporaryDirectory() as outdir:
        run([sys.executable, prog, "gloo", str(n), outdir], f"gloo on {n} ranks")
        run([tern_cmd, "run", "-n", str(n), "--", sys.executable, prog, "tern", outdir],
            f"tern on {n} ranks")
        gloo, tern = load(outdir, "gloo", n), load(outdir, "tern", n)
    print(f"every rank bit-identical to rank 0 in both runs")
    worst = 0.0
    for i, (g, t) in enumerate(zip(gloo["params"], tern["params"])):
        rel = ((t - g).abs().max() / g.abs().max()).item()
        worst = max(worst, rel)
        print(f"parameter {i} {tuple(g.shape)}: max |tern - gloo| / max |gloo| = {rel:.2e}")
        assert rel <= RTOL, f"parameter {i} differs by {rel:.2e} of its scale, over {RTOL}"
    for name, run_ in (("gloo", gloo), ("tern", tern)):
        losses = run_["losses"]
        assert losses[-1] < 0.5 * losses[0], f"{name}: the loss went {losses[0]:.3f} -> {losses[-1]:.3f}"
    print(f"loss {gloo['losses'][0]:.4f} -> gloo {gloo['losses'][-1]:.6f}, tern {tern['losses'][-1]:.6f}; "
          f"worst relative difference {worst:.2e} (bound {RTOL})")
    print("3 passed, 0 failed")


if __name__ == "__main__":
    main()
