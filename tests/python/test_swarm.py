"""test_swarm.py LAYOUT: tern.swarm, the Python binding of the swarm averaging calls.

    python3 test_swarm.py LAYOUT         LAYOUT is swarm_layout (swarm_layout.c): the ctypes
                                         structs must match tern.h's field for field; Swarm()'s
                                         argument errors; then 4 peers, each a `test_swarm.py peer`
                                         process on 127.0.0.1, on a 2x2 grid with unequal values
                                         and weights: after 2 rounds every peer holds the exact
                                         weighted global average (1e-5) and the weights sum to the
                                         total; peers 1-3 then download peer 0's state
    python3 test_swarm.py peer I RUN BOOT...   one peer (peer 3 averages a torch tensor, the others
                                         numpy arrays); peer 0 first checks that bad arguments
                                         raise before anything is sent
A peer talks to the test on its stdin and stdout: it prints its address, averages on "go",
prints its result as JSON, downloads its bootstrap peer's state (if it has one) and leaves on
"end". "N passed, 0 failed" closes a good run.
"""
import ctypes
import json
import subprocess
import sys
import time

import numpy as np

import tern
import tern.swarm
from tern import _lib

N, DIM, ROUNDS = 4, 1000, 2
AVG_OPTS = dict(min_group=2, target_group=2, match_timeout=10, average_timeout=10)


def values(i):
    """Peer i's vector: element k = (7 i mod 13) + 0.25 + (k mod 7)."""
    return (i * 7 % 13) + 0.25 + (np.arange(DIM) % 7).astype(np.float32)


def weight(i):
    return float(1 + i % 3)


def expect_raises(kind, fn, needle=""):
    try:
        fn()
    except kind as e:
        assert needle in str(e), f"{kind.__name__} '{e}' does not say '{needle}'"
        return e
    raise AssertionError(f"no {kind.__name__} raised")


# ---- the test ------------------------------------------------------------------------------

def layout_matches_c(layout):
    """Every field of the ctypes structs at the offset and with the size the C compiler gave."""
    structs = {"tern_swarm_options": _lib.SwarmOptions,
               "tern_swarm_average_options": _lib.SwarmAverageOptions,
               "tern_swarm_report": _lib.SwarmReport}
    c_fields = {name: [] for name in structs}
    for line in subprocess.run([layout], stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines():
        struct, field, *nums = line.split()
        if field == "sizeof":
            size = ctypes.sizeof(structs[struct])
            assert int(nums[0]) == size, f"sizeof({struct}): C {nums[0]}, ctypes {size}"
        else:
            c_fields[struct].append((field, int(nums[0]), int(nums[1])))
    for struct, cls in structs.items():
        py = [(name, getattr(cls, name).offset, getattr(cls, name).size) for name, _ in cls._fields_]
        assert py == c_fields[struct], f"{struct}: C {c_fields[struct]}, ctypes {py}"


def join_arguments_refused():
    S = tern.swarm.Swarm
    expect_raises(TypeError, lambda: S("127.0.0.1:0", "r", bootstrap="127.0.0.1:1"), "one string")
    expect_raises(TypeError, lambda: S(7000, "r"), "listen")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", ""), "run_id")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", "r", grid=(2, 2), coords=(0, 2)), "grid")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", "r", grid=(2, 2)), "grid")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", "r", coords=(0, -1)), ">= 0")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", "r", bandwidth=-5), "bandwidth")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", "r", region="eu", coords=(0, 1)), "no coords")
    expect_raises(ValueError, lambda: S("127.0.0.1:0", "r", region="eu", grid=(2, 2, 2)), "peers per region")
    expect_raises(tern.TernError, lambda: S("127.0.0.1:0", "r", region="eu west"), "region 'eu west'")
    e = expect_raises(tern.TernError, lambda: S("nonsense", "r"), "no port")
    assert e.status_name == "TERN_ERR_INVALID_ARG", e  # tern's refusal, with tern's message
    # no key: a non-loopback address is refused before anything binds or is sent
    e = expect_raises(tern.TernError, lambda: S("127.0.0.1:0", "r", bootstrap=["192.0.2.1:9"]),
                      "--insecure")
    assert e.status_name == "TERN_ERR_AUTH", e
    expect_raises(tern.TernError, lambda: S("0.0.0.0:0", "r"), "not a loopback address")


def start_peer(i, run_id, bootstrap):
    return subprocess.Popen([sys.executable, __file__, "peer", str(i), run_id] + bootstrap,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def expect_line(p, tag):
    """The next line peer p prints, which must start with tag; its rest."""
    line = p.stdout.readline()
    assert line.startswith(tag + " "), f"peer {p.args[3]}: wanted '{tag} ...', got {line!r} " \
                                       f"(exit {p.poll()})"
    return line[len(tag) + 1:]


def say(p, word):
    p.stdin.write(word + "\n")
    p.stdin.flush()


def grid_average_exact(peers):
    for p in peers:
        say(p, "go")
    results = [json.loads(expect_line(p, "result")) for p in peers]
    want = sum(weight(i) * values(i).astype(np.float64) for i in range(N)) / sum(map(weight, range(N)))
    for i, res in enumerate(results):
        x, reports = np.array(res["x"]), res["reports"]
        err = np.max(np.abs(x - want) / np.maximum(1, np.abs(want)))
        assert err <= 1e-5, f"peer {i}: {x[:4]} against the global average {want[:4]} (error {err:.2g})"
        w = weight(i)
        for r, rep in enumerate(reports):
            assert (rep["round"], rep["group_size"], rep["failed_count"], rep["failed"],
                    rep["parts_updated"]) == (r, 2, 0, [], 2), f"peer {i} round {r}: {rep}"
            assert rep["weight_before"] == w and rep["bytes_sent"] > 0 and rep["bytes_received"] > 0 \
                and rep["seconds_matching"] >= 0 and rep["seconds_averaging"] >= 0, f"peer {i}: {rep}"
            w = rep["weight_after"]
        assert res["weight"] == w, f"peer {i}: average() returned {res['weight']}, its report {w}"
    total = sum(res["weight"] for res in results)
    assert abs(total - sum(map(weight, range(N)))) <= 1e-9, f"the weights sum to {total}"
    slowest = max(sum(r["seconds_matching"] + r["seconds_averaging"] for r in res["reports"])
                  for res in results)
    print(f"{N} peers on a 2x2 grid hold the weighted global average after {ROUNDS} rounds "
          f"(weights sum {total:g}); the slowest peer's rounds took {slowest:.2f} s")
    return results[0]["x"]


def state_downloaded(peers, state0):
    for p in peers[1:]:  # peer 0 serves its state until they have it
        say(p, "end")
        got = json.loads(expect_line(p, "downloaded"))
        assert got == state0, f"peer {p.args[3]} downloaded {got[:4]}, peer 0 holds {state0[:4]}"
        assert p.wait(30) == 0, f"peer {p.args[3]} exited {p.returncode}"
    say(peers[0], "end")
    assert peers[0].wait(30) == 0, f"peer 0 exited {peers[0].returncode}"


def run_test(layout):
    t0 = time.monotonic()
    layout_matches_c(layout)
    join_arguments_refused()
    run_id = f"pyswarm-{time.time_ns()}"
    peers = [start_peer(0, run_id, [])]
    try:
        boot = [expect_line(peers[0], "address").strip()]
        peers += [start_peer(i, run_id, boot) for i in range(1, N)]
        for p in peers[1:]:
            expect_line(p, "address")
        state_downloaded(peers, grid_average_exact(peers))
    finally:
        for p in peers:
            if p.poll() is None:
                p.kill()
    print(f"test_swarm: {time.monotonic() - t0:.1f} s")
    print("4 passed, 0 failed")
    return 0


# ---- one peer ------------------------------------------------------------------------------

def bad_arguments_raise_before_sending(sw):
    x = values(0)
    expect_raises(TypeError, lambda: sw.average(x.astype(np.float64), 1.0), "float32")
    expect_raises(TypeError, lambda: sw.average(list(x), 1.0), "numpy array or a torch tensor")
    expect_raises(ValueError, lambda: sw.average(np.zeros((4, 4), np.float32)[:, ::2], 1.0), "C-contiguous")
    expect_raises(ValueError, lambda: sw.average(np.zeros(0, np.float32), 1.0), "empty")
    expect_raises(ValueError, lambda: sw.average(x, 1.0, compress="zip"), "compress 'zip'")
    expect_raises(ValueError, lambda: sw.average(x, -1.0), "weight")
    expect_raises(ValueError, lambda: sw.average(x, float("nan")), "weight")
    expect_raises(TypeError, lambda: sw.average(x, "1"), "weight")
    expect_raises(TypeError, lambda: sw.average(x, 1.0, min_group=1.5), "min_group")
    expect_raises(ValueError, lambda: sw.average(x, 1.0, match_timeout=0), "match_timeout")
    expect_raises(ValueError, lambda: sw.average(x, 1.0, clip=-1), "clip")
    assert np.array_equal(x, values(0)), "a refused call changed the vector"
    e = expect_raises(tern.TernError, lambda: sw.download_state(x), "no bootstrap address")
    assert e.status_name == "TERN_ERR_INVALID_ARG"  # tern_swarm_last_error's message
    # None of these ran a round: the first real average reports round 0 (the test checks it).


def run_peer(i, run_id, bootstrap):
    x = values(i)
    if i == 3:
        import torch
        x = torch.from_numpy(x)
    with tern.swarm.Swarm("127.0.0.1:0", run_id, bootstrap, grid=(2, 2),
                          coords=(i % 2, i // 2)) as sw:
        if i == 0:
            bad_arguments_raise_before_sending(sw)
        print("address", sw.address, flush=True)
        if sys.stdin.readline() != "go\n":
            return 1
        w, reports = weight(i), []
        for _ in range(ROUNDS):
            w, report = sw.average(x, w, **AVG_OPTS)
            reports.append(report)
        print("result", json.dumps({"x": x.tolist(), "weight": w, "reports": reports}), flush=True)
        if sys.stdin.readline() != "end\n":
            return 1
        if bootstrap:
            y = np.zeros(DIM, np.float32)
            sw.download_state(y, timeout=10)
            print("downloaded", json.dumps(y.tolist()), flush=True)
    expect_raises(ValueError, lambda: sw.average(x, w), "left")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "peer":
        sys.exit(run_peer(int(sys.argv[2]), sys.argv[3], sys.argv[4:]))
    sys.exit(run_test(sys.argv[1]))
