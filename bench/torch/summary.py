"""summary.py OUT.csv: run.sh's measurements as docs/PYTORCH.md's markdown tables: the backend's
per-call overhead over tern's own Python call (its "overhead" row: the median of the
differences within each repetition; each figure the lowest over the runs in OUT.csv), and each
timed operation over tern and over Gloo with their ratio.
"""
import csv
import sys


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    best = {}
    for r in rows:
        key = (r["what"], r["backend"], int(r["ranks"]), int(r["bytes"]))
        best[key] = min(best.get(key, float("inf")), float(r["us"]))
    print("| ranks | `dist.all_reduce`, 8 floats | tern's `Comm.allreduce` | overhead | Gloo's `dist.all_reduce` |")
    print("|---|---|---|---|---|")
    for n in sorted({k[2] for k in best if k[0] == "call"}):
        call, py = best.get(("call", "tern", n, 32)), best.get(("pycall", "tern", n, 32))
        gloo = best.get(("call", "gloo", n, 32))
        over = best.get(("overhead", "tern", n, 32), call - py)
        gtext = f"{gloo:.1f} us" if gloo else "-"
        print(f"| {n} | {call:.1f} us | {py:.1f} us | {over:+.1f} us | {gtext} |")
    print()
    print("| operation | ranks | bytes | tern | Gloo | tern / Gloo |")
    print("|---|---|---|---|---|---|")
    for what in ("ddp_step", "ddp_step_hook", "all_gather_into_tensor", "reduce_scatter_tensor",
                 "all_to_all_single_splits"):
        for (w, b, n, nbytes), us in sorted(best.items(), key=lambda kv: (kv[0][2], kv[0][3])):
            if w != what or b != "tern" or n < 2:
                continue
            gloo = best.get(("ddp_step" if what == "ddp_step_hook" else what, "gloo", n, nbytes))
            ratio = f"{us / gloo:.2f}" if gloo else "-"
            gtext = f"{gloo / 1000:.2f} ms" if gloo else "-"
            print(f"| {what} | {n} | {nbytes} | {us / 1000:.2f} ms | {gtext} | {ratio} |")


if __name__ == "__main__":
    main()
