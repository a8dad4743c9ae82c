"""evaluate.py DIR...: scores a run's snapshots (train.py --out) on the validation text and
writes DIR/curve.csv (seconds since the run's start, validation loss in nats per byte)."""
import glob
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm  # noqa: E402

torch.set_num_threads(1)
_, val = lm.split(lm.text_bytes())
for d in sys.argv[1:]:
    rows = []
    for path in sorted(glob.glob(os.path.join(d, "snap-*.pt"))):
        s = torch.load(path)
        torch.manual_seed(0)
        m = lm.make(s.get("model", "transformer"), s.get("width", 1024))
        with torch.no_grad():
            for p, q in zip(m.parameters(), s["params"]):
                p.copy_(q)
        rows.append((s["t"], lm.evaluate(m, val), s["epoch"]))
    with open(os.path.join(d, "curve.csv"), "w") as f:
        f.write("seconds,val_loss,epoch\n")
        for t, v, e in rows:
            f.write(f"{t:.2f},{v:.4f},{e}\n")
    print(d, " ".join(f"{t:.0f}:{v:.3f}" for t, v, _ in rows))
