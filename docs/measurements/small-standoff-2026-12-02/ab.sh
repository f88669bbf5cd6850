#!/bin/bash
# ab.sh OLD NEW ROUNDS [shm]: goal_groups' sub-group points of 8 B, 4 ranks (rank r on CPU
# r % 2), the two installs alternated ROUNDS times; with "shm", each iteration starts at the
# benchmark's shared-memory separator (bench/separator.h), else at goal's world barrier.
# Prints each run's medians (us) and, per point, the median over runs and new / old.
set -e
OLD=$1; NEW=$2; R=${3:-6}; SEP=$4
BIN=${BIN:-build/bench/goal_groups}
COLLS=${COLLS:-allreduce,allgather,alltoall,bcast,allgatherv,alltoallv}
for i in $(seq "$R"); do for which in old new; do
  if [ $which = old ]; then P=$OLD; else P=$NEW; fi
  SF=""
  if [ "$SEP" = shm ]; then head -c 4096 /dev/zero > /dev/shm/ab-sep; SF="--sep-file /dev/shm/ab-sep"; fi
  LD_LIBRARY_PATH=$P/lib flock /work/cpu.lock "$P/bin/goalrun" -n 4 "$BIN" --pin --tests coll \
      --colls "$COLLS" --scopes sub --sizes 8 --budget-ms 100 $SF 2>&1 |
    python3 -c "
import sys, json
for l in sys.stdin:
    if '\"coll\"' in l and l.startswith('{'):
        d = json.loads(l); print('$which', d['coll'], d['median_us'])"
done; done | python3 -c "
import sys, collections, statistics as st
d = collections.defaultdict(lambda: collections.defaultdict(list))
for l in sys.stdin:
    w, c, v = l.split(); d[c][w].append(float(v))
for c in d:
    o, n = d[c]['old'], d[c]['new']
    print('%-11s old %s | new %s | medians %.2f -> %.2f (%.2f)' % (c, ' '.join('%.2f' % x for x in o),
          ' '.join('%.2f' % x for x in n), st.median(o), st.median(n), st.median(n) / st.median(o)))
"
