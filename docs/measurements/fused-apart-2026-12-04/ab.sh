#!/bin/bash
# ab.sh N COLLS SIZES PREFIX...: goal_coll's AUTO on 2 ranks (--pin), the installs
# alternated N times, quiet, with the core-to-core probe (bench/c2c) before and after
# each run. One line per run: INSTALL C2C_BEFORE_NS C2C_AFTER_NS COLL/BYTES=US...
# Run from the repository after `make` (build/bench/goal_coll, build/bench/c2c).
set -eu
N=$1; COLLS=$2; SIZES=$3; shift 3
BIN=$PWD/build/bench/goal_coll; C2C=$PWD/build/bench/c2c
c2c() { "$C2C" | python3 -c 'import json,sys; print(json.load(sys.stdin)["oneway_ns"])'; }
for _ in $(seq "$N"); do for P in "$@"; do
  a=$(c2c)
  o=$(LD_LIBRARY_PATH=$P/lib "$P/bin/goalrun" -n 2 "$BIN" --pin --algs auto --colls "$COLLS" --sizes "$SIZES" --budget-ms 200 2>&1 |
      grep '^{' | grep '"coll"' | python3 -c '
import json, sys
print(" ".join("%s/%d=%.1f" % (d["coll"], d["bytes"], d["median_us"]) for d in map(json.loads, sys.stdin)))')
  b=$(c2c)
  echo "$(basename "$P") $a $b $o"
done; done
