#!/bin/bash
# Alternates two goal installs' bench/goal_p2p latency tests, 2 ranks pinned by the program,
# R rounds; prints per run the core-to-core probe and the median one-way latency (us) of
# the SIZES (bytes, "|"-separated; default 64 KiB to 16 MiB) ("sch:" latency_sched, "run:"
# latency_runwait, sizes in KiB).
#
#   BASE=DIR NEW=DIR [R=4] [TESTS=latency_sched,latency_runwait] [SIZES=8|65536] ab_lat.sh > lat-ab.txt
#
# Run from a directory holding, built by hand: goal_p2p_base and goal_p2p_new (bench/goal_p2p.c
# against each prefix, -Wl,-rpath,PREFIX/lib) and c2c (bench/c2c.c).
R=${R:-4}; TESTS=${TESTS:-latency_sched}; SIZES=${SIZES:-65536|262144|1048576|4194304|16777216}
for i in $(seq 1 "$R"); do
  for v in base new; do
    P=$BASE; [ $v = new ] && P=$NEW
    c2c=$(./c2c | python3 -c 'import sys,json; print(json.loads(sys.stdin.read())["oneway_ns"])')
    out=$("$P/bin/goalrun" -n 2 "./goal_p2p_$v" --pin --tests "$TESTS" 2>&1 |
      grep -E "\"bytes\": ($SIZES)," | python3 -c "
import sys, json
print(' '.join('%s:%s=%.3f' % (d['test'][8:11], d['bytes'] >> 10 or '%dB' % d['bytes'], d['median_us']) for d in map(json.loads, sys.stdin)))")
    echo "$i $v c2c=$c2c $out"
  done
done
