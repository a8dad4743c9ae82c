"""doc_snippets.py PAGE.md N: runs every ```python block of PAGE, as written, on N ranks started
with torchrun's variables (torchrun_env.py), one block after another. A block that fails prints
its output and the test ends "0 passed, 1 failed"; else "K passed, 0 failed".
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    page, n = sys.argv[1], sys.argv[2]
    blocks = re.findall(r"^```python\n(.*?)^```", open(page).read(), re.S | re.M)
    with tempfile.TemporaryDirectory() as d:
        for i, code in enumerate(blocks):
            path = os.path.join(d, f"snippet{i}.py")
            with open(path, "w") as f:
                f.write(code)
            p = subprocess.run([sys.executable, os.path.join(HERE, "torchrun_env.py"), n, path],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=d, env=dict(os.environ, TIMEOUT="120"))
            first = code.strip().splitlines()[-1][:60]
            if p.returncode != 0:
                print(f"snippet {i + 1} of {len(blocks)} (ends '{first}') failed:\n{p.stdout}")
                print("0 passed, 1 failed")
                return 1
            print(f"snippet {i + 1} of {len(blocks)} ran on {n} ranks")
    print(f"{len(blocks)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
