#!/bin/bash
# ab.sh PREFIX OPS [N]: N alternated pairs of overlap.c under MPICH with libgoal-mpi across the
# emulated cluster "lat" (goal-cluster up --name lat --hosts 2 --rails 1 --rate 1gbit; root),
# GOAL_NET_READY=1 then 0 (a build with ready.patch; without it the variable is ignored);
# prints t_pure and the overlap of the "none" variant per operation.
# T: the goal-cluster binary (default goal-cluster); BUDGET: overlap.c's --budget-ms (1000).
P=$1; OPS=$2; T=${T:-goal-cluster}; B="$(dirname "$0")/../../../build/bench/mpi_overlap.mpich"
for i in $(seq "${3:-3}"); do for R in 1 0; do
  $T mpirun --name lat --np 2 --per-host 1 --rails 0 --mpich -- -genv UCX_TLS self,tcp \
      -genv LD_PRELOAD "$P/lib/libgoal-mpi-mpich.so" -genv GOAL_RAILS rail0 -genv GOAL_NET_READY $R \
      "$B" --name x --tests overlap --ops "$OPS" --budget-ms "${BUDGET:-1000}" --max-s 90 --pin 2>/dev/null |
  python3 -c "
import json, sys
out = []
for l in sys.stdin:
    try: x = json.loads(l)
    except ValueError: continue
    if x.get('variant') == 'none':
        out.append('%s:%d pure %.0f ovl %.1f' % (x['op'], x['bytes'], x['t_pure_us'], x['overlap_pct']))
print('READY=$R', ' | '.join(out))"
done; done
