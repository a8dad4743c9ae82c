"""_lib.py: finds libtern.so and declares the C functions tern's Python binding calls.

Where it looks, in order: the file named by TERN_LIBRARY; the copy bundled in this package (a
wheel from `pip install ./python` built where it found one); the build tree this package sits in
(python/tern/ -> build/libtern.so, for a checkout); the install this package sits in
(<prefix>/lib/python3.X/dist-packages/tern/ -> <prefix>/lib/libtern.so.0); the libdir pkg-config
gives for tern (tern.pc, PKG_CONFIG_PATH); then the system's loader path (libtern.so.0, as after
`make install` to /usr/local). The first that loads wins.
ctypes releases the GIL around every call, so a rank blocked in tern never stalls other Python
threads.
"""

import ctypes
import os
import subprocess

_here = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("TERN_LIBRARY")
    if env:
        return [env]
    return [
        os.path.join(_here, "libtern.so.0"),
        os.path.join(_here, "..", "..", "build", "libtern.so"),
        os.path.join(_here, "..", "..", "..", "libtern.so.0"),
    ] + _pkg_config() + ["libtern.so.0"]


def _pkg_config():
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "tern"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    libdir = out.stdout.strip()
    return [os.path.join(libdir, "libtern.so.0")] if out.returncode == 0 and libdir else []


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            return ctypes.CDLL(os.path.normpath(path) if os.path.sep in path else path), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("tern: cannot load libtern: tried " + "; ".join(tried) +
                      ". Build it (make), install it (make install), or set TERN_LIBRARY.")


lib, path = _load()

_p, _i, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_pp = ctypes.POINTER(ctypes.c_void_p)
_d, _s, _u64 = ctypes.c_double, ctypes.c_char_p, ctypes.c_ulonglong

SWARM_MAX_DIMS, SWARM_MAX_BOOTSTRAP, SWARM_MAX_FAILED = 8, 16, 16


# The swarm's structs of tern.h, field for field (tests/python/swarm_layout.c prints the C
# offsets; test_swarm.py compares them with these).
class SwarmOptions(ctypes.Structure):
    _fields_ = [("listen", _s), ("bootstrap", _s * SWARM_MAX_BOOTSTRAP), ("run_id", _s),
                ("key", _s), ("ndims", _i), ("coords", _i * SWARM_MAX_DIMS), ("bandwidth", _d),
                ("grid", _i * SWARM_MAX_DIMS), ("insecure", _i), ("region", _s)]


class SwarmAverageOptions(ctypes.Structure):
    _fields_ = [("compress", _i), ("min_group", _i), ("target_group", _i),
                ("match_timeout", _d), ("average_timeout", _d), ("random_groups", _i),
                ("rounds", _i), ("clip", _d)]


class SwarmReport(ctypes.Structure):
    _fields_ = [("round", ctypes.c_uint), ("group_size", _i), ("failed_count", _i),
                ("failed", _u64 * SWARM_MAX_FAILED), ("parts_updated", _i),
                ("weight_before", _d), ("weight_after", _d), ("bytes_sent", _u64),
                ("bytes_received", _u64), ("seconds_matching", _d), ("seconds_averaging", _d),
                ("pooled", _i)]


# name: (argument types, result type); every tern_status is a C int.
_protos = {
    "tern_version_str": ([], ctypes.c_char_p),
    "tern_status_str": ([_i], ctypes.c_char_p),
    "tern_comm_init_env": ([_pp], _i),
    "tern_comm_init": ([_pp, _i, _i, ctypes.c_char_p], _i),
    "tern_comm_split": ([_p, _i, _i, _pp], _i),
    "tern_comm_rank": ([_p], _i),
    "tern_comm_size": ([_p], _i),
    "tern_comm_abort": ([_p], None),
    "tern_comm_destroy": ([_p], None),
    "tern_comm_last_error": ([_p], ctypes.c_char_p),
    "tern_allreduce": ([_p, _p, _p, _sz, _i, _i], _i),
    "tern_reduce_scatter": ([_p, _p, _p, _sz, _i, _i], _i),
    "tern_allgather": ([_p, _p, _p, _sz, _i], _i),
    "tern_broadcast": ([_p, _p, _p, _sz, _i, _i], _i),
    "tern_reduce": ([_p, _p, _p, _sz, _i, _i, _i], _i),
    "tern_alltoall": ([_p, _p, _p, _sz, _i], _i),
    "tern_alltoallv": ([_p, _p, _p, _p, _p, _p, _p, _i], _i),
    "tern_send": ([_p, _p, _sz, _i, _i], _i),
    "tern_recv": ([_p, _p, _sz, _i, _i], _i),
    "tern_recv_any": ([_p, _p, _sz, _i, ctypes.POINTER(_i)], _i),
    "tern_gather": ([_p, _p, _p, _sz, _i, _i], _i),
    "tern_scatter": ([_p, _p, _p, _sz, _i, _i], _i),
    "tern_barrier": ([_p], _i),
    "tern_iallreduce": ([_p, _p, _p, _sz, _i, _i, _pp], _i),
    "tern_ireduce_scatter": ([_p, _p, _p, _sz, _i, _i, _pp], _i),
    "tern_iallgather": ([_p, _p, _p, _sz, _i, _pp], _i),
    "tern_ibroadcast": ([_p, _p, _p, _sz, _i, _i, _pp], _i),
    "tern_ireduce": ([_p, _p, _p, _sz, _i, _i, _i, _pp], _i),
    "tern_ialltoall": ([_p, _p, _p, _sz, _i, _pp], _i),
    "tern_ialltoallv": ([_p, _p, _p, _p, _p, _p, _p, _i, _pp], _i),
    "tern_isend": ([_p, _p, _sz, _i, _i, _pp], _i),
    "tern_irecv": ([_p, _p, _sz, _i, _i, _pp], _i),
    "tern_irecv_any": ([_p, _p, _sz, _i, ctypes.POINTER(_i), _pp], _i),
    "tern_igather": ([_p, _p, _p, _sz, _i, _i, _pp], _i),
    "tern_iscatter": ([_p, _p, _p, _sz, _i, _i, _pp], _i),
    "tern_ibarrier": ([_p, _pp], _i),
    "tern_wait": ([_p], _i),
    "tern_test": ([_p, ctypes.POINTER(ctypes.c_int)], _i),
    "tern_swarm_join": ([_pp, ctypes.POINTER(SwarmOptions)], _i),
    "tern_swarm_id": ([_p], _u64),
    "tern_swarm_address": ([_p], _s),
    "tern_swarm_download_state": ([_p, _p, _sz, _d], _i),
    "tern_swarm_serve_state": ([_p, _p, _sz], _i),
    "tern_swarm_publish_status": ([_p, ctypes.c_ulonglong, _d], _i),
    "tern_swarm_average": ([_p, _p, _sz, ctypes.POINTER(_d), ctypes.POINTER(SwarmAverageOptions),
                            ctypes.POINTER(SwarmReport)], _i),
    "tern_swarm_leave": ([_p], None),
    "tern_swarm_last_error": ([_p], _s),
}
for _name, (_args, _res) in _protos.items():
    _f = getattr(lib, _name)
    _f.argtypes = _args
    _f.restype = _res
