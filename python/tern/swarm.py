"""tern.swarm: swarm averaging (Moshpit SGD) from Python, over tern_swarm_* (docs/SWARM.md).

    import numpy as np, tern.swarm
    with tern.swarm.Swarm("10.0.0.5:7000", "my-run", bootstrap=["10.0.0.4:7000"],
                          key=secret, grid=(4, 4), coords=(1, 3)) as sw:
        x = np.zeros(1 << 20, dtype=np.float32)
        sw.download_state(x)          # a peer joining a running swarm starts where it is
        w = 1.0                       # this peer's weight: samples seen, say
        for step in range(100):
            ...                       # train: update x
            w, report = sw.average(x, w, compress="int8")   # x averaged with a group, in place

Peers find each other through a DHT bootstrapped only from the addresses given; round r groups
the peers that share every grid coordinate but axis r mod d. Vectors are numpy arrays or CPU
torch tensors of float32, C-contiguous. Arguments that cannot make a valid call raise ValueError
or TypeError before anything is sent; failures tern reports raise tern.TernError with
tern_swarm_last_error's message. A failed group is not an error: the round averages with
whoever is left (alone at worst) and the report says so. A Swarm is used by one thread at a
time.
"""

import ctypes
import math
import numbers

from . import _F32, TernError, _Buf, _lib

__all__ = ["Swarm", "COMPRESS"]

# tern_compress, by name
COMPRESS = {"none": 0, "fp16": 1, "bf16": 2, "int8": 3, "int8ef": 4}


def _vector(x, what):
    """x as a _Buf of float32 values, at least one."""
    b = _Buf(x, what)
    if b.dtype != _F32:
        raise TypeError(f"{what}: the swarm averages float32, not {x.dtype}")
    if b.count == 0:
        raise ValueError(f"{what}: the vector is empty")
    return b


def _positive(value, what, kind=numbers.Real):
    """value, checked to be a finite number > 0 of kind."""
    if not isinstance(value, kind) or isinstance(value, bool):
        noun = "an integer" if kind is numbers.Integral else "a number"
        raise TypeError(f"{what}: want {noun}, not {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} {value}: must be > 0")
    return value


def _option(value, what, kind=numbers.Real):
    """An option for C: 0 (tern's default) for None, else value checked by _positive."""
    return 0 if value is None else _positive(value, what, kind)


def _encoded(s, what):
    if not isinstance(s, str):
        raise TypeError(f"{what}: want a str, not {type(s).__name__}")
    return s.encode()


def _error(handle):
    """tern_swarm_last_error of handle (None: of the last failed join)."""
    return _lib.lib.tern_swarm_last_error(handle).decode(errors="replace")


def _ints(values, what):
    if isinstance(values, (str, bytes)) or not all(isinstance(v, numbers.Integral) for v in values):
        raise TypeError(f"{what}: want a sequence of integers")
    return [int(v) for v in values]


class Swarm:
    """This process's peer in one swarm (tern_swarm_join).

    listen: "host:port" for both the averaging (TCP) and the DHT (UDP); port 0 picks a free one,
    self.address tells which. run_id: peers of one run share it. bootstrap: "host:port" of live
    peers (at most 16), the only addresses contacted first. key: a shared secret (None: TERN_KEY
    or TERN_KEY_FILE, if set). coords: this peer's place on the grid (1 to 8 integers >= 0;
    None: one axis, coordinate 0); grid, if given, its size per axis, checked against coords (a
    line's group then closes as soon as it is full).
    bandwidth: declared bytes/s (None: 1e9), which sizes the part of the vector this peer reduces.
    insecure: without a key, listen and bootstrap must be loopback addresses (else TernError)
    unless this is True; then anyone who reaches the peer can join, and the log says so.
    region: the region this peer runs in (letters, digits, ".", "_", "-"): it then places the
    peer itself (no coords; grid, if given, is (peers per region, regions)): even rounds average inside the region, odd ones with one
    peer of each other region; without bandwidth the peer measures its own (docs/SWARM.md).
    """

    def __init__(self, listen, run_id, bootstrap=(), key=None, grid=None, coords=None,
                 bandwidth=None, insecure=False, region=None):
        self._h = None
        if isinstance(bootstrap, (str, bytes)):
            raise TypeError('bootstrap: want a list of "host:port" strings, not one string')
        boot = [_encoded(b, "bootstrap") for b in bootstrap]
        if len(boot) > _lib.SWARM_MAX_BOOTSTRAP:
            raise ValueError(f"bootstrap: {len(boot)} addresses, at most "
                             f"{_lib.SWARM_MAX_BOOTSTRAP}")
        run = _encoded(run_id, "run_id")
        if not run:
            raise ValueError("run_id: must not be empty")
        coords = [] if coords is None else _ints(coords, "coords")
        if len(coords) > _lib.SWARM_MAX_DIMS or any(c < 0 for c in coords):
            raise ValueError(f"coords {coords}: at most {_lib.SWARM_MAX_DIMS} integers >= 0")
        if grid is not None:
            grid = _ints(grid, "grid")
            if region is not None and len(grid) != 2:
                raise ValueError(f"grid {grid}: with a region, (peers per region, regions)")
            if region is None and (len(grid) != len(coords)
                                   or any(c >= m for c, m in zip(coords, grid))):
                raise ValueError(f"coords {coords} are not a place on the grid {grid}")
        if region is not None and coords:
            raise ValueError("region places the peer: give no coords with it")
        o = _lib.SwarmOptions(listen=_encoded(listen, "listen"), run_id=run,
                              region=None if region is None else _encoded(region, "region"),
                              key=None if key is None else _encoded(key, "key"),
                              ndims=len(coords), bandwidth=_option(bandwidth, "bandwidth"),
                              insecure=1 if insecure else 0)
        o.bootstrap[:len(boot)] = boot
        o.coords[:len(coords)] = coords
        if grid is not None:
            o.grid[:len(grid)] = grid
        handle = ctypes.c_void_p()
        rc = _lib.lib.tern_swarm_join(ctypes.byref(handle), ctypes.byref(o))
        if rc != 0:
            raise TernError("joining the swarm", rc, _error(None))
        self._h = handle
        self.bootstrap = tuple(bootstrap)  # where download_state asks; none: a first peer
        self._rejoin = dict(run_id=run_id, bootstrap=self.bootstrap, key=key, insecure=insecure)
        self.id = _lib.lib.tern_swarm_id(handle)
        self.address = _lib.lib.tern_swarm_address(handle).decode()

    def _handle(self):
        if self._h is None:
            raise ValueError("tern: this swarm peer has left")
        return self._h

    def _check(self, what, rc):
        if rc != 0:
            raise TernError(what, rc, _error(self._h))

    def download_state(self, x, timeout=10.0):
        """For a peer joining a running swarm, before its first average: fills x with a live
        bootstrap peer's last averaged vector (of x's length) and takes its round number."""
        h, b = self._handle(), _vector(x, "download_state")
        self._check("downloading the swarm's state", _lib.lib.tern_swarm_download_state(
            h, b.ptr, b.count, _positive(timeout, "timeout")))

    def state_fetcher(self):
        """A second handle, joined as this one was, on this peer's host, for download_state
        from another thread while this one averages (this peer's round is left as it is). Join
        it once for as many downloads as needed, and leave it (a context manager)."""
        host = self.address.rsplit(":", 1)[0]
        return Swarm(f"{host}:0", **self._rejoin)

    def serve_state(self, x):
        """Sets the state this peer gives joiners (download_state) to a copy of x, until its next
        average replaces it with the averaged vector."""
        h, b = self._handle(), _vector(x, "serve_state")
        self._check("serving a state", _lib.lib.tern_swarm_serve_state(h, b.ptr, b.count))

    def publish_status(self, epoch, samples_per_s):
        """Publishes this peer's progress for `tern swarm status` (docs/CLI.md): epoch and
        samples/s as the caller counts them, with the peer's round and last group size. The
        peer refreshes the record until it leaves."""
        if not (isinstance(epoch, numbers.Integral) and epoch >= 0):
            raise ValueError(f"epoch {epoch!r}: want an integer >= 0")
        self._check("publishing the status", _lib.lib.tern_swarm_publish_status(
            self._handle(), int(epoch), float(samples_per_s)))

    def average(self, x, weight, compress="none", min_group=None, target_group=None,
                match_timeout=None, average_timeout=None, random_groups=None, rounds=None,
                clip=None):
        """One round: finds this round's group and averages x with it in place, weighted by
        weight (> 0). Returns (new_weight, report): new_weight is this peer's share of the
        group's weight, to pass to the next round; report is a dict of tern_swarm_report's
        fields (round, group_size, failed_count, failed: the dropped peers' ids, parts_updated,
        weight_before, weight_after, bytes_sent, bytes_received, seconds_matching,
        seconds_averaging, pooled: 1 when matched in the round's pool of lonely peers).
        compress: "none", "fp16", "bf16", "int8" or "int8ef" (8-bit with error feedback) on the wire. random_groups K > 0: random
        groups instead of the grid line: each round the cells 0..K*target_group-1 (a peer's
        cell is coords[0]) are dealt into K groups of target_group by a permutation of the run
        and round; K = N/2 with target_group 2 is pairwise gossip. rounds R: the run's rounds are
        0..R-1, and a late peer that jumps to the others' round stops at R-1. clip TAU > 0:
        CenteredClip of radius TAU instead of the weighted mean (members count once each; one
        member moves a part by about TAU / (members - 1) at most). None leaves an
        option at tern's default: min_group 2 (fewer found: the round's pool, then alone),
        target_group 64, match_timeout 5 s, average_timeout 10 s, random_groups 0 (the grid),
        rounds 0 (no last round), clip off."""
        h, b = self._handle(), _vector(x, "average")
        if compress not in COMPRESS:
            raise ValueError(f"compress '{compress}': want one of {', '.join(COMPRESS)}")
        w = ctypes.c_double(_positive(weight, "weight"))
        opt = _lib.SwarmAverageOptions(
            compress=COMPRESS[compress],
            min_group=_option(min_group, "min_group", numbers.Integral),
            target_group=_option(target_group, "target_group", numbers.Integral),
            match_timeout=_option(match_timeout, "match_timeout"),
            average_timeout=_option(average_timeout, "average_timeout"),
            random_groups=_option(random_groups, "random_groups", numbers.Integral),
            rounds=_option(rounds, "rounds", numbers.Integral),
            clip=_option(clip, "clip"))
        r = _lib.SwarmReport()
        self._check("swarm average", _lib.lib.tern_swarm_average(
            h, b.ptr, b.count, ctypes.byref(w), ctypes.byref(opt), ctypes.byref(r)))
        report = {name: getattr(r, name) for name, _ in r._fields_}
        report["failed"] = list(r.failed[:min(r.failed_count, _lib.SWARM_MAX_FAILED)])
        return w.value, report

    def leave(self):
        """Tells the last group this peer left, stops the DHT and frees everything."""
        if self._h is not None:
            _lib.lib.tern_swarm_leave(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.leave()

    def __del__(self):
        self.leave()

    def __repr__(self):
        return f"<tern.swarm.Swarm {self.id:016x} on {self.address}>" if self._h else \
            "<tern.swarm.Swarm left>"


# The training layer over Swarm (docs/SWARM_TRAINING.md); imported last, as it builds on Swarm.
from .swarm_averager import CODEC_ERROR, Averager, AveragingError  # noqa: E402,F401
from .swarm_optimizer import Optimizer  # noqa: E402,F401
