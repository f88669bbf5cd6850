#!/bin/bash
# ab.sh OLD NEW ROUNDS [COLLS [SIZES [RANKS]]]: goal_coll's AUTO points on RANKS ranks (default 4;
# rank r pinned to CPU r % 2 by --pin), the two installs OLD and NEW alternated ROUNDS times.
# Prints each run's medians (us) and, per point, the median over runs and new / old.
# BIN: a goal_coll built against either install (it links libgoal.so from LD_LIBRARY_PATH);
# `python3 bench/coll.py` builds one at build/bench/goal_coll.
set -e
OLD=$1; NEW=$2; R=${3:-5}; COLLS=${4:-alltoall,alltoallv}; SIZES=${5:-65536}; N=${6:-4}
BIN=${BIN:-build/bench/goal_coll}
for i in $(seq "$R"); do for which in old new; do
  if [ $which = old ]; then P=$OLD; else P=$NEW; fi
  LD_LIBRARY_PATH=$P/lib flock /work/cpu.lock "$P/bin/goalrun" -n "$N" "$BIN" --pin --algs auto \
      --colls "$COLLS" --sizes "$SIZES" --budget-ms 300 2>&1 |
    python3 -c "
import sys, json
for l in sys.stdin:
    if l.startswith('{') and '\"coll\"' in l:
        d = json.loads(l); print('$which', '%s/%d' % (d['coll'], d['bytes']), d['median_us'])"
done; done | python3 -c "
import sys, collections, statistics as st
d = collections.defaultdict(lambda: collections.defaultdict(list))
for l in sys.stdin:
    w, c, v = l.split(); d[c][w].append(float(v))
for c in d:
    o, n = d[c]['old'], d[c]['new']
    if not o or not n: continue
    print('%-16s old %s | new %s | medians %.2f -> %.2f (%.2f)' % (c, ' '.join('%.1f' % x for x in o),
          ' '.join('%.1f' % x for x in n), st.median(o), st.median(n), st.median(n) / st.median(o)))
"
