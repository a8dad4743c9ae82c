"""torchrun_env.py N PROG ARGS...: starts N ranks of `python3 PROG ARGS` with the variables torchrun
sets (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT a free
port), as torchrun would: Debian 12's torchrun (torch 1.13 under Python 3.11) fails before
starting anything (its --redirects default is None). Ends every rank when one fails (unless
KEEP_GOING=1: a fault test's survivors report), or after TIMEOUT seconds (env, default 120), and
exits with the first failure's code.
"""
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    n, prog = int(sys.argv[1]), sys.argv[2:]
    deadline = time.monotonic() + float(os.environ.get("TIMEOUT", "120"))
    port = str(free_port())
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n),
                   LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable] + prog, env=env))
    code, keep_going = 0, os.environ.get("KEEP_GOING") == "1"
    while any(p.poll() is None for p in procs):
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        if (failed and not keep_going) or time.monotonic() > deadline:
            code = failed[0] if failed else 124
            print(f"torchrun_env: {'a rank exited ' + str(code) if failed else 'timed out'}; "
                  "ending the others", file=sys.stderr)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
        code = code or p.returncode
    return code


if __name__ == "__main__":
    sys.exit(main())
