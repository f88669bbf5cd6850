#!/bin/bash
# ab-states.sh N PREFIX... : N alternations of goal_p2p's bandwidth test between
# the goal installs PREFIX..., quiet, with the core-to-core probe (bench/c2c)
# run before and after each run. One line per run:
#   INSTALL C2C_BEFORE_NS C2C_AFTER_NS GBPS_64K GBPS_256K GBPS_1M GBPS_4M GBPS_16M
# Run from the repository after `make` (build/bench/goal_p2p, build/bench/c2c);
# swap the order of the installs in a second batch (an order effect was seen).
set -eu
N=$1; shift
BIN=$PWD/build/bench/goal_p2p; C2C=$PWD/build/bench/c2c
c2c() { "$C2C" | python3 -c 'import json,sys; print(json.load(sys.stdin)["oneway_ns"])'; }
for _ in $(seq "$N"); do for P in "$@"; do
  a=$(c2c)
  g=$(LD_LIBRARY_PATH=$P/lib "$P/bin/goalrun" -n 2 "$BIN" --tests bandwidth 2>&1 | grep '"bandwidth"' |
      python3 -c 'import json,sys; print(" ".join("%.1f" % json.loads(l)["gbps"] for l in sys.stdin))')
  b=$(c2c)
  echo "$(basename "$P") $a $b $g"
done; done
