#!/bin/bash
# ccl-settings.sh COLLS SIZES [VAR=VALUE ...]: bench/coll.py's oneCCL program (built by a run of
# coll.py into build/bench/mpi_coll.oneccl) on NR (default 2) ranks under MPICH, with the given
# oneCCL settings; prints collective, bytes, median us and iterations per point.
#   NR=4 ccl-settings.sh barrier,allreduce 8,65536,1048576 CCL_ATL_SHM=1 CCL_WORKER_OFFLOAD=0
set -u
c=$1; s=$2; shift 2
envs=(); for e in "$@"; do envs+=(-genv "${e%%=*}" "${e#*=}"); done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout 120 mpirun.mpich -n "${NR:-2}" -bind-to none "${envs[@]}" "${BUILD:-build/bench}/mpi_coll.oneccl" oneccl \
    --variants blocking --pin --colls "$c" --sizes "$s" --budget-ms 300 > "$out" 2>&1
python3 - "$out" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{") and '"coll"' in line:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        print(d["coll"], d["bytes"], d["median_us"], d.get("iters"))
PY
