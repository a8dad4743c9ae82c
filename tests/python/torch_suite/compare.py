"""compare.py GLOO.csv TERN.csv: torch's suite with Gloo against the same with tern (run_suite.py's
files). Holds when every test that passes with Gloo passes with tern, or is skipped for tern by
the suite itself before any collective runs (its decorators name Gloo, or a feature such as
"gpu" that tern does not claim); those are listed with the suite's reason. Also lists the tests
tern passes and Gloo does not. Prints "1 passed, 0 failed" or "0 passed, 1 failed".
"""
import sys


def load(path):
    rows = {}
    for line in open(path):
        name, outcome, *reason = line.rstrip("\n").split(",", 2)
        rows[name] = (outcome, reason[0] if reason else "")
    return rows


def count(rows, outcome):
    return sum(1 for o, _ in rows.values() if o == outcome)


def main():
    gloo, tern = load(sys.argv[1]), load(sys.argv[2])
    for name, rows in (("gloo", gloo), ("tern", tern)):
        print(f"{name}: {count(rows, 'passed')} passed, {count(rows, 'failed')} failed, "
              f"{count(rows, 'error')} errors, {count(rows, 'skipped')} skipped")
    missing, skipped = [], []
    for name, (outcome, _) in sorted(gloo.items()):
        if outcome != "passed" or tern.get(name, ("absent",))[0] == "passed":
            continue
        t = tern.get(name, ("absent", ""))
        (skipped if t[0] == "skipped" else missing).append((name, t))
    for name, (_, reason) in skipped:
        print(f"skipped for tern by the suite, passes with gloo: {name} ({reason or 'no reason kept'})")
    for name, (outcome, _) in missing:
        print(f"FAILS WITH TERN, passes with gloo: {name} ({outcome})")
    extra = [n for n, (o, _) in sorted(tern.items()) if o == "passed" and gloo.get(n, ("",))[0] != "passed"]
    for name in extra:
        print(f"passes with tern, not with gloo: {name} (gloo: {gloo.get(name, ('absent',))[0]})")
    print(f"{len(missing)} of gloo's passes fail with tern; {len(skipped)} skipped for tern by the "
          f"suite; {len(extra)} pass with tern only")
    print("0 passed, 1 failed" if missing else "1 passed, 0 failed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
