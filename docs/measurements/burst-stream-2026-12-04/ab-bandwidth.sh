#!/bin/bash
# ab.sh OLD NEW ROUNDS NOISE: goal_p2p bandwidth, the two installs alternated; NOISE none|busy|detour:...
OLD=$1; NEW=$2; R=$3; NOISE=${4:-none}; BIN=${BIN:-build/bench/goal_p2p}
for i in $(seq $R); do for which in old new; do
  if [ $which = old ]; then P=$OLD; else P=$NEW; fi
  bash -c "
    if [ $NOISE != none ]; then $NEW/bin/goal noise $NOISE >/dev/null 2>&1 & NP=\$!; sleep 0.3; fi
    LD_LIBRARY_PATH=$P/lib $P/bin/goalrun -n 2 $BIN --tests bandwidth 2>&1 | grep '\"bandwidth\"'
    [ -n \"\$NP\" ] && kill \$NP" | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); print('$which', d['bytes'], d['gbps'])"
done; done | python3 -c "
import sys, collections, statistics as st
d = collections.defaultdict(lambda: collections.defaultdict(list))
for l in sys.stdin:
    w, b, v = l.split(); d[int(b)][w].append(float(v))
for b in sorted(d):
    o, n = d[b]['old'], d[b]['new']
    print('%8d old %s | new %s | medians %.1f -> %.1f GB/s (%.2fx)' % (b, ' '.join('%.1f' % x for x in o), ' '.join('%.1f' % x for x in n), st.median(o), st.median(n), st.median(n)/st.median(o)))
"
