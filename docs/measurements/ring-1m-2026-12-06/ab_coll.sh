#!/bin/bash
# Alternates GOAL_SHM_RING_BYTES=256K (the old default) and 1M on one goal_coll build, AUTO,
# N ranks (2: pinned by the program; 4: goalrun's binding), R rounds; one line per point
# (runs hold the benchmark lock BENCH_LOCK, default /tmp/bench.lock):
#   GC=./goal_coll GOALRUN=DIR/bin/goalrun N=2 R=3 SIZES=8,65536,1048576 ./ab_coll.sh > coll2-ab.txt
N=${N:-2}; R=${R:-3}; SIZES=${SIZES:-65536}
C=${C:-allreduce,bcast,allgather,alltoall,reduce_scatter_block,reduce,gather,scatter,barrier}
PIN=""; [ "$N" -le 2 ] && PIN=--pin
for r in $(seq "$R"); do for e in 256K 1M; do
  : > /tmp/sep.ab; truncate -s 4096 /tmp/sep.ab
  GOAL_SHM_RING_BYTES=$e flock "${BENCH_LOCK:-/tmp/bench.lock}" "$GOALRUN" -n "$N" "$GC" $PIN --colls "$C" --sizes "$SIZES" \
      --algs auto --sep-file /tmp/sep.ab 2>/dev/null | python3 -c "
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    if d.get('test') == 'coll': print('r$r e$e', d['coll'], d['bytes'], round(d['median_us'], 2))"
done; done
