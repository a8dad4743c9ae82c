"""plot.py OUT.png LABEL=DIR...: validation loss against wall-clock seconds, one line per run
(each DIR's curve.csv from evaluate.py), with the quality target as a dashed line (TARGET, nats
per byte, from the environment; default 2.5). Also prints, per run, the first second at which
the loss is at or under the target."""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

target = float(os.environ.get("TARGET", "2.5"))
fig, ax = plt.subplots(figsize=(7, 4.2))
for spec in sys.argv[2:]:
    label, d = spec.rsplit("=", 1)
    with open(os.path.join(d, "curve.csv")) as f:
        rows = [(float(r["seconds"]), float(r["val_loss"])) for r in csv.DictReader(f)]
    ax.plot([t for t, _ in rows], [v for _, v in rows], marker=".", label=label)
    hit = next((t for t, v in rows if v <= target), None)
    print(f"{label}: at {target} after {hit:.0f} s" if hit is not None else
          f"{label}: not at {target} (best {min(v for _, v in rows):.3f})")
ax.axhline(target, color="grey", linestyle="--", linewidth=1)
ax.set_xlabel("wall-clock seconds since the run's start")
ax.set_ylabel("validation loss (nats / byte)")
ax.set_title("1.04 M-parameter byte LM, 8 peers in 4 emulated regions")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[1], dpi=110)
