"""Alternates goal_coll runs of several goal builds or settings, 4 ranks.

usage: BENCH=DIR python3 ab4.py ROUNDS SETTING...   SETTING = PREFIX[:ENV=V,ENV=V]
BENCH: the directory holding goal_coll and c2c (PREFIX/share/goal/build/bench
once `goal bench coll --prefix PREFIX` has built them); COLLS, SIZES and N
(ranks) narrow the run. Prints per point the median of the runs made in the
vCPUs' fast state (c2c under 120 ns before and after), their count, the
median of all runs, and each setting's ratio to the first.
"""
import json, subprocess, sys, os, statistics
R = int(sys.argv[1]); settings = sys.argv[2:]
B = os.environ['BENCH']
args = ['--pin', '--algs', 'auto', '--sizes', os.environ.get('SIZES', '8,65536,1048576'), '--gather-extra', '--budget-ms', '25', '--min-iters', '7', '--max-iters', '500']
if os.environ.get('COLLS'): args += ['--colls', os.environ['COLLS']]
def c2c():
    return json.loads(subprocess.run([B + '/c2c'], capture_output=True, text=True).stdout)['oneway_ns']
res = {s: {} for s in settings}
for r in range(R):
    for s in (settings if r % 2 == 0 else settings[::-1]):
        p, _, e = s.partition(':')
        env = dict(os.environ)
        for kv in filter(None, e.split(',')):
            k, v = kv.split('='); env[k] = v
        c0 = c2c()
        out = subprocess.run([p + '/bin/goalrun', '-n', os.environ.get('N', '4'), B + '/goal_coll'] + args, capture_output=True, text=True, env=env).stdout
        c1 = c2c()
        state = 'fast' if max(c0, c1) < 120 else ('slow' if min(c0, c1) > 120 else 'mixed')
        for l in out.splitlines():
            if not l.startswith('{'): continue
            d = json.loads(l)
            if d.get('test') != 'coll': continue
            res[s].setdefault((d['coll'], d['bytes']), []).append((state, d['median_us']))
        print(f'round {r} {s} c2c {c0:.0f}/{c1:.0f} {state}', file=sys.stderr, flush=True)
keys = sorted(res[settings[0]])
print('point'.ljust(28) + ''.join(s[-30:].rjust(32) for s in settings) + '   ratio (fast-state medians, others/first)')
for k in keys:
    cols = []; meds = []
    for s in settings:
        v = res[s].get(k, [])
        fast = [x for st, x in v if st == 'fast']
        m = statistics.median(fast) if fast else float('nan')
        meds.append(m)
        cols.append(f"{m:9.2f} ({len(fast)}) all {statistics.median([x for _, x in v]):8.2f}")
    print(f"{k[0]}/{k[1]}".ljust(28) + ''.join(c.rjust(32) for c in cols) + '   ' + ' '.join(f"{m/meds[0]:.2f}" for m in meds[1:]))
