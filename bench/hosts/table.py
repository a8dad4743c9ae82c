"""table.py: bench/hosts/run.sh's table: measured times across namespace hosts against tern sim
coll on a platform made of the run's own link facts (run.sh says which).

    table.py RAW TERN NPROC SECONDS   (RAW: run.sh's index of tern bench outputs)
"""
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

SHM_BETA = 1 / 12.45e9  # coll_model_shm's copy, s/B: a rank's own block is copied, not sent
# (tern sim coll's default shared memory and reductions are coll_model_shm's 12.45 and 8.1 GB/s)


def bench_times(path):
    """{bytes: out-of-place us} from a tern bench output."""
    times = {}
    for line in open(path):
        f = line.split()
        if len(f) < 10 or line.startswith('#'):
            continue
        times[int(f[0])] = float(f[5])
    return times


def least(paths):
    """Per size, the least of the benches' times: on a machine shared with other work a bench
    is only ever slowed, so the fastest of several is the run least disturbed; calibration and
    cells alike (with medians, at load average 25 to 40, bursts of other work got into the
    calibration exchanges: 52 of 216 cells within 25%, against 94 with the least)."""
    runs = [bench_times(p) for p in paths]
    return {m: min(r[m] for r in runs) for m in runs[0]}


def calibrate(lo, nic):
    """The platform's link facts: (GB/s, latency us, message cost table)."""
    sizes = sorted(lo)
    # each end of the exchange within one host: half of it, less the rank's own block's copy
    # (an allgather of m bytes moves m / 2 each way)
    costs = [(m // 2, max(0.0, (lo[m] - m / 2 * SHM_BETA * 1e6) / 2)) for m in sizes]
    big = sorted(nic)[-2:]
    bw = (big[1] - big[0]) / 2 / ((nic[big[1]] - nic[big[0]]) * 1e-6)
    lat = nic[sizes[0]]
    return bw / 1e9, lat, ','.join('%d:%.2f' % c for c in costs if c[0] > 0)


def simulate(tern, coll, hosts, rph, nproc, lo, hi, plat):
    """tern sim coll's times by algorithm. Every host's ranks share this machine's nproc cores:
    a host gets nproc / hosts of them, or one core that much slower when that is under one."""
    bw, lat, costs = plat
    share = nproc / hosts
    slow = max(1.0, 1 / share)
    costs = ','.join('%s:%.2f' % (c.split(':')[0], float(c.split(':')[1]) * slow)
                     for c in costs.split(','))
    cmd = [tern, 'sim', 'coll', coll, '-n', str(hosts * rph), '--rph', str(rph), '--cores',
           str(max(1, int(share))), '-b', str(lo), '-e', str(hi), '-f', '4', '-a',
           'ring,rhd,hier', '--nic-bw', '%.6g' % bw, '--nic-lat', '%.3f' % lat, '--msg-cost',
           costs, '--shm-bw', '%.4g' % (12.45 / slow), '--reduce-bw', '%.4g' % (8.1 / slow)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    sim = defaultdict(list)  # algorithm: times in us by size, ascending
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and not line.startswith('#') and f[0] == coll:
            # '-': the algorithm does not apply to the layout (hier with one rank a host)
            sim[f[3]].append(float('nan') if f[4] == '-' else float(f[4]))
    return sim, ' '.join(cmd[3:])


def main():
    raw, tern, nproc, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    where = os.path.dirname(raw)
    calib = defaultdict(list)
    cells = defaultdict(list)
    for line in open(raw):
        f = line.split()
        if f[0] == 'calib':
            calib[(f[1], f[2])].append(os.path.join(where, f[4]))
        else:
            cells[tuple(f[1:5])].append(os.path.join(where, f[6]))
    rates = list(dict.fromkeys(k[1] for k in calib))
    rows, cmds, unsimulated = [], [], []
    print('Calibration (link facts measured by the same run):\n')
    for rate in rates:
        plat = calibrate(least(calib[('lo', rate)]), least(calib[('nic', rate)]))
        print('- %s: NIC %.4g GB/s, %.1f us (2 hosts x 1 rank); message cost on each end '
              '(bytes:us, within one host over TCP): %s' % (rate, plat[0], plat[1], plat[2]))
        for (r, layout, coll, algo), paths in cells.items():
            if r != rate:
                continue
            hosts, rph = map(int, layout.split('x'))
            meas = least(paths)
            sizes = sorted(meas)
            sim, cmd = simulate(tern, coll, hosts, rph, nproc, sizes[0], sizes[-1], plat)
            cmds.append(cmd)
            label = algo.replace(':', '-')
            for i, m in enumerate(sizes):
                s = sim[label][i] if i < len(sim[label]) else float('nan')
                if math.isnan(s):
                    unsimulated.append('%s %s %s %s %d' % (rate, layout, coll, algo, m))
                    continue
                rows.append((rate, layout, coll, algo, m, meas[m], s, s / meas[m] - 1))
    print()
    print('| rate | hosts x ranks | collective | algorithm | size (B) | measured (us) | '
          'simulated (us) | error |')
    print('|---|---|---|---|---:|---:|---:|---:|')
    for r in rows:
        print('| %s | %s | %s | %s | %d | %.1f | %.1f | %+.1f%%%s |' % (
            *r[:7], 100 * r[7], ' !' if abs(r[7]) > 0.25 else ''))
    ok = sum(abs(r[7]) <= 0.25 for r in rows)
    print('\n%d cells, %d within 25%%, mean |error| %.1f%%; %d s of wall time' % (
        len(rows), ok, 100 * statistics.mean(abs(r[7]) for r in rows), seconds))
    if unsimulated:
        print('\nMeasured, but tern sim coll does not simulate the algorithm for the layout: '
              + ', '.join(unsimulated))
    print()
    print('| rate | hosts x ranks | algorithm | cells | within 25% | mean error | range |')
    print('|---|---|---|---:|---:|---:|---|')
    groups = defaultdict(list)
    for r in rows:
        groups[(r[0], r[1], r[3])].append(r[7])
    for (rate, layout, algo), e in groups.items():
        print('| %s | %s | %s | %d | %d | %+.1f%% | %+.0f%% to %+.0f%% |' % (
            rate, layout, algo, len(e), sum(abs(x) <= 0.25 for x in e),
            100 * statistics.mean(e), 100 * min(e), 100 * max(e)))


if __name__ == '__main__':
    main()
