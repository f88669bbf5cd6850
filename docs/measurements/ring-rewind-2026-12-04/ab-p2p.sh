#!/bin/bash
# ab-p2p.sh ROUNDS PREFIX... : goal's one-way latency (bench/goal_p2p.c, latency_sched: 64 B,
# 512 B, 1 KiB, 4 KiB, 16 KiB) from each install PREFIX, then Open MPI's (bench/mpi_p2p.c), all
# alternated ROUNDS times, 2 ranks pinned to CPUs 0 and 1. Prints per size each run's median
# (us), the median over runs and its ratio to Open MPI's. Build the programs first:
#   cc -O2 -IPREFIX/include bench/goal_p2p.c -o build/bench/goal_p2p -LPREFIX/lib -lgoal -lm
#   mpicc.openmpi -O2 bench/mpi_p2p.c -o build/bench/mpi_p2p_ompi -lm
R=$1; shift
SIZES="(64, 512, 1024, 4096, 16384)"
for i in $(seq "$R"); do k=0
  for P in "$@"; do k=$((k+1))
    LD_LIBRARY_PATH=$P/lib flock /tmp/bench.lock "$P/bin/goalrun" -n 2 build/bench/goal_p2p --pin --tests latency_sched 2>&1 |
      python3 -c "
import sys, json
for l in sys.stdin:
    if l.startswith('{') and '\"bytes\"' in l:
        d = json.loads(l)
        if d.get('bytes') in $SIZES: print('goal$k', d['bytes'], d['median_us'])"
  done
  flock /tmp/bench.lock mpirun.openmpi --allow-run-as-root --bind-to none -n 2 build/bench/mpi_p2p_ompi --pin 2>&1 |
    python3 -c "
import sys, json
for l in sys.stdin:
    if l.startswith('{') and 'latency' in l:
        d = json.loads(l)
        if d.get('bytes') in $SIZES: print('ompi', d['bytes'], d['median_us'])"
done | python3 -c "
import sys, collections, statistics as st
d = collections.defaultdict(lambda: collections.defaultdict(list))
for l in sys.stdin:
    w, b, v = l.split(); d[int(b)][w].append(float(v))
for b in sorted(d):
    o = st.median(d[b]['ompi'])
    print(b, ' | '.join('%s %s med %.3f (%.2f)' % (w, ' '.join('%.3f' % x for x in xs), st.median(xs), st.median(xs) / o)
                        for w, xs in sorted(d[b].items())))
"
