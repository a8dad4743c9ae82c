#!/usr/bin/env python3
"""topo.py: the WAN harness's plan: which peer sits in which region, at which address, and the
figures of every link, from a region file such as aws-10-regions.json.

  topo.py FILE OUTDIR --regions A,B,... --peers N [--place R,R,...] [--bw-scale S]
          [--intra-gbit G] [--loss P]

The file holds "regions" and "links" ({"a", "b", "latency_ms", "bandwidth_gbps"}); latency_ms is
taken as the round trip, so each direction is held latency_ms / 2. Rates are multiplied by
--bw-scale (default 0.1: one machine's two cores cannot carry 8 to 16 gigabit flows through
user-space relays; latency is never scaled). Peers are dealt to regions in contiguous blocks
(peer i in region floor(i R / N)) unless --place names each peer's region index. Peer i of region
r has address 10.77.(r+1).(i+1) on one /16; region r is the /24 10.77.(r+1).0.

It writes to OUTDIR:
  peers        "PEER REGION_INDEX REGION_NAME ADDRESS", one line per peer
  links        "A B NAME_A NAME_B RTT_MS ONE_WAY_MS GBPS RATE_KBIT LOSS", one per pair of regions
  intra        the rate inside a region, in kbit/s
  relay-PEER   what PEER's relay delays: "CIDR ONE_WAY_MS LOSS" for every other region
  tc-PEER      what PEER's link shapes: "own RATE_KBIT" for its own region, then "CIDR RATE_KBIT"
               for every other region; the rates are what htb
               must allow for the link's figure to be the TCP payload's: htb counts whole
               frames, 1514 bytes for 1448 of payload (Ethernet, IP, TCP with timestamps)
Errors name the file, the region or the option that is wrong, and exit 2.
"""
import argparse
import json
import os
import sys


FRAME, MSS = 1514, 1448


def fail(msg):
    print(f"topo.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}:{e.colno}: {e.msg}")
    if not isinstance(doc.get("regions"), list) or not isinstance(doc.get("links"), list):
        fail(f"{path}: wants a list 'regions' and a list 'links'")
    links = {}
    for i, ln in enumerate(doc["links"]):
        try:
            a, b = str(ln["a"]), str(ln["b"])
            lat, bw = float(ln["latency_ms"]), float(ln["bandwidth_gbps"])
        except (KeyError, TypeError, ValueError):
            fail(f"{path}: link {i} wants a, b, latency_ms and bandwidth_gbps")
        if not (0 <= lat <= 10000 and 0 < bw <= 1000):
            fail(f"{path}: link {a}-{b}: latency {lat} ms or bandwidth {bw} Gbit/s out of range")
        links[(a, b)] = links[(b, a)] = (lat, bw)
    return doc["regions"], links


def parse_args():
    p = argparse.ArgumentParser(prog="topo.py")
    p.add_argument("file")
    p.add_argument("outdir")
    p.add_argument("--regions", required=True)
    p.add_argument("--peers", type=int, required=True)
    p.add_argument("--place")
    p.add_argument("--bw-scale", type=float, default=0.1)
    p.add_argument("--intra-gbit", type=float, default=10.0)
    p.add_argument("--loss", type=float, default=0.0)
    return p.parse_args()


def placement(args, nregions):
    if args.place is None:
        return [i * nregions // args.peers for i in range(args.peers)]
    try:
        place = [int(x) for x in args.place.split(",")]
    except ValueError:
        fail(f"--place '{args.place}' is not a list of region indices")
    if len(place) != args.peers or any(not 0 <= r < nregions for r in place):
        fail(f"--place wants {args.peers} region indices from 0 to {nregions - 1}")
    return place


def main():
    args = parse_args()
    known, links = load(args.file)
    regions = args.regions.split(",")
    for r in regions:
        if r not in known:
            fail(f"no region '{r}' in {args.file} (it has {', '.join(known)})")
    if len(set(regions)) != len(regions) or not 1 <= len(regions) <= 250:
        fail("--regions wants 1 to 250 distinct names")
    if not 1 <= args.peers <= 250:
        fail("--peers wants 1 to 250")
    if not (0 < args.bw_scale <= 1 and args.intra_gbit > 0 and 0 <= args.loss < 1):
        fail("--bw-scale wants (0, 1], --intra-gbit > 0, --loss [0, 1)")
    place = placement(args, len(regions))
    for a in regions:
        for b in regions:
            if a != b and (a, b) not in links:
                fail(f"{args.file} has no link {a}-{b}")
    out = args.outdir
    kbit = lambda gbps: max(8, round(gbps * 1e6 * args.bw_scale))
    with open(os.path.join(out, "peers"), "w") as f:
        for i, r in enumerate(place):
            f.write(f"{i} {r} {regions[r]} 10.77.{r + 1}.{i + 1}\n")
    with open(os.path.join(out, "links"), "w") as f:
        for a in range(len(regions)):
            for b in range(a + 1, len(regions)):
                lat, bw = links[(regions[a], regions[b])]
                f.write(f"{a} {b} {regions[a]} {regions[b]} {lat:g} {lat / 2:g} {bw:g} "
                        f"{kbit(bw)} {args.loss:g}\n")
    with open(os.path.join(out, "intra"), "w") as f:
        f.write(f"{kbit(args.intra_gbit)}\n")
    for i, r in enumerate(place):
        with open(os.path.join(out, f"relay-{i}"), "w") as rf, \
                open(os.path.join(out, f"tc-{i}"), "w") as tf:
            tf.write(f"own {round(kbit(args.intra_gbit) * FRAME / MSS)}\n")
            for o in range(len(regions)):
                if o == r:
                    continue
                lat, bw = links[(regions[r], regions[o])]
                rf.write(f"10.77.{o + 1}.0/24 {lat / 2:g} {args.loss:g}\n")
                tf.write(f"10.77.{o + 1}.0/24 {round(kbit(bw) * FRAME / MSS)}\n")


main()
