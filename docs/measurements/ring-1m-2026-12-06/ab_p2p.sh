#!/bin/bash
# Alternates two goal_p2p builds (OLD, NEW: each linked against its own install) R times,
# 2 ranks pinned, the core-to-core probe (bench/c2c) before each run; one line per run
# (bench/ab.py does the alternation with paired ratios; this loop adds the probe per run).
# Runs hold the benchmark lock BENCH_LOCK (default /tmp/bench.lock).
#   OLD=./gp NEW=./gp-new C2C=./c2c GOALRUN=DIR/bin/goalrun R=6 ./ab_p2p.sh > p2p-ab.txt
R=${R:-6}
for r in $(seq "$R"); do for b in "$OLD" "$NEW"; do
  c=$("$C2C" | tail -1 | python3 -c "import sys,json; print('%.1f' % json.load(sys.stdin)['oneway_ns'])")
  flock "${BENCH_LOCK:-/tmp/bench.lock}" "$GOALRUN" -n 2 "$b" --pin --tests latency_sched,bandwidth 2>/dev/null | python3 -c "
import sys, json
out = []
for l in sys.stdin:
    d = json.loads(l)
    if d.get('test') == 'latency_sched': out.append('L%d=%.3f' % (d['bytes'], d['median_us']))
    if d.get('test') == 'bandwidth': out.append('B%d=%.2f' % (d['bytes'], d['gbps']))
print('round $r build $(basename "$b") c2c_ns $c', ' '.join(out))"
done; done
