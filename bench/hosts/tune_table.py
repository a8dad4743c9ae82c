"""tune_table.py: bench/hosts/tune.sh's table: the runtime selector's picks across namespace hosts,
with the tuning file `tern tune` measured there and with the built-in model, scored against every
algorithm timed at sizes the file never measured.

    tune_table.py RAW SECONDS LOAD_BEFORE LOAD_AFTER   (RAW: tune.sh's index of outputs)
"""
import os
import re
import sys
from collections import defaultdict

from table import bench_times, least  # per size, as run.sh's table takes them

LINE = re.compile(r' r0 .* INFO (\w+) #\d+: (\d+) elements of f32 \(\w+\), (.*) over shm\+tcp, '
                  r'\d+ phases \((.*)\)$')
HIER = re.compile(r'hier \(within hosts ring, across hosts (\w+);.*\)')


def picks(path, coll, sizes):
    """{size: (algorithm as the file names it, what chose it)} from rank 0's log: the calls of
    coll at the bench's sizes, whose counts, ascending, are the largest distinct ones."""
    seen = {}
    for line in open(path):
        m = LINE.search(line)
        if m and m.group(1) == coll:
            algo = HIER.sub(lambda h: 'hier:' + h.group(1), m.group(3))
            seen[int(m.group(2))] = (algo, m.group(4))
    counts = sorted(seen)[-len(sizes):]
    return {s: seen[c] for s, c in zip(sorted(sizes), counts)}


def held_out(path):
    """tern tune's own scores: {predictor: 'xx.x% (sizes between .., largest sizes ..)'}."""
    scores = {}
    for line in open(path):
        m = re.match(r'\s+(built-in model|fitted model|measured table)\s+([\d.]+%)\s+\((.*)\)',
                     line)
        if m:
            scores[m.group(1)] = '%s (%s)' % (m.group(2), m.group(3))
    return scores


def agreement(paths_by_algo):
    """The noise's ceiling on any selector: at how many sizes the fastest algorithm of the first
    round of benches measured within 5% of the fastest in the second round (of how many)."""
    rounds = {a: [bench_times(p) for p in paths[:2]] for a, paths in paths_by_algo.items()}
    if any(len(r) < 2 for r in rounds.values()):
        return 0, 0
    sizes = sorted(next(iter(rounds.values()))[0])
    right = 0
    for m in sizes:
        first = min(rounds, key=lambda a: rounds[a][0][m])
        right += rounds[first][1][m] <= 1.05 * min(r[1][m] for r in rounds.values())
    return right, len(sizes)


def main():
    raw, seconds, load0, load1 = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    where = os.path.dirname(raw)
    tunes, cells, logs = {}, defaultdict(list), {}
    for line in open(raw):
        f = line.split()
        if f[0] in ('tune', 'merged'):
            tunes[(f[1], f[2])] = os.path.join(where, f[3])
        elif f[0] == 'cell':
            cells[tuple(f[1:5])].append(os.path.join(where, f[6]))
        else:
            logs[tuple(f[1:5])] = os.path.join(where, f[5])
    print('Load average (1, 5, 15 min) %s before, %s after; %s s of wall time.\n'
          % (load0, load1, seconds))
    print("`tern tune` across the hosts, its own held-out scores (pick within 5% of the fastest, "
          "on the sweep's points; \"all\": a rate's rows fitted together, each layout held out "
          "in turn too):\n")
    print('| rate | hosts x ranks | built-in model | measured table | file says |')
    print('|---|---|---|---|---|')
    for (rate, layout), path in tunes.items():
        s = held_out(path)
        use = [l.split()[1] for l in open(path + '.file') if l.startswith('use ')]
        print('| %s | %s | %s | %s | use %s |' % (rate, layout, s.get('built-in model', '-'),
                                                   s.get('measured table', '-'), use[0]))
    times = defaultdict(dict)  # (rate, layout, coll): {algo: {size: us}}
    for (rate, layout, coll, algo), paths in cells.items():
        times[(rate, layout, coll)][algo] = least(paths)
    rows, by_place = [], defaultdict(lambda: [0, 0, 0, 0, 0])
    for key, algos in times.items():
        paths = {a: cells[key + (a,)] for a in algos}
        agree, cells_agreed = agreement(paths)
        by_place[key[:2]][3] += agree
        by_place[key[:2]][4] += cells_agreed
        sizes = sorted(next(iter(algos.values())))
        chosen = {w: picks(logs[key + (w,)], key[2], sizes) for w in ('file', 'builtin')}
        for m in sizes:
            best = min(algos, key=lambda a: algos[a][m])
            row = list(key) + [m, best, algos[best][m]]
            place = by_place[key[:2]]
            place[0] += 1
            for i, w in enumerate(('file', 'builtin')):
                algo, why = chosen[w][m]
                t = algos.get(algo, {}).get(m)
                right = t is not None and t <= 1.05 * algos[best][m]
                place[1 + i] += right
                row.append('%s%s (%s)' % (algo, '' if t is None else ' %+.0f%%' % (
                    100 * (t / algos[best][m] - 1)), why) + ('' if right else ' !'))
            rows.append(row)
    print('\nThe runtime selector at sizes the file never measured, against every algorithm '
          'timed there (right: within 5% of the fastest):\n')
    print('| rate | hosts x ranks | cells | with the file | built-in | round 1 in round 2 |')
    print('|---|---|---:|---:|---:|---:|')
    total = [0] * 5
    for (rate, layout), v in by_place.items():
        print('| %s | %s | %d | %d | %d | %d of %d |' % (rate, layout, *v))
        total = [t + x for t, x in zip(total, v)]
    print('| all | | %d | %d (%.1f%%) | %d (%.1f%%) | %d of %d |' % (
        total[0], total[1], 100 * total[1] / total[0], total[2], 100 * total[2] / total[0],
        total[3], total[4]))
    print('\n("Round 1 in round 2": the fastest algorithm of the first round of benches measured '
          'within 5% of the fastest in the second: how far the noise of this machine lets one '
          'round of measurements name the fastest of another.)')
    print('\n| rate | hosts x ranks | collective | size (B) | fastest | us | with the file | '
          'built-in |')
    print('|---|---|---|---:|---|---:|---|---|')
    for r in rows:
        print('| %s | %s | %s | %d | %s | %.1f | %s | %s |' % tuple(r))


if __name__ == '__main__':
    main()
