#!/bin/bash
# p2p_offsets.sh OLD NEW ROUNDS [OFFSETS]: goal_p2p's ping-pong (latency_runwait, 2 ranks,
# pinned) with its buffers OFFSET bytes past a page boundary, the installs OLD and NEW
# alternated ROUNDS times. Prints one line per run: which offset size:median_us ...
# BIN: goal_p2p built from bench/goal_p2p.c against either install (links libgoal.so from
# LD_LIBRARY_PATH). Both installs read the same calibration (export XDG_CACHE_HOME to fix it).
set -e
OLD=$1; NEW=$2; R=${3:-5}; OFFSETS=${4:-0,8,24,40}
BIN=${BIN:-build/bench/goal_p2p}
for i in $(seq "$R"); do for off in ${OFFSETS//,/ }; do for which in old new; do
  if [ $which = old ]; then P=$OLD; else P=$NEW; fi
  LD_LIBRARY_PATH=$P/lib flock /work/cpu.lock "$P/bin/goalrun" -n 2 "$BIN" --pin --offset "$off" \
      --tests latency_runwait 2>&1 |
    python3 -c "
import sys, json
r = [json.loads(l) for l in sys.stdin if l.startswith('{')]
print('$which', $off, ' '.join('%d:%.2f' % (d['bytes'], d['median_us']) for d in r if 4096 <= d.get('bytes', 0) <= 1 << 20))"
done; done; done
