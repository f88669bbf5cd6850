#!/bin/bash
# states.sh N: alternate goal (AUTO) and Open MPI (blocking) 2-rank barrier runs, each between two c2c probes
cd /work/main
for i in $(seq $1); do
  for lib in goal ompi; do
    a=$(build/bench/c2c 2>/dev/null | python3 -c "import sys,json;print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get('oneway_ns'))" 2>/dev/null)
    if [ $lib = goal ]; then
      v=$(/work/pfx-stage/bin/goalrun -n 2 build/bench/goal_coll --pin --algs auto --colls barrier --budget-ms 40 2>/dev/null | grep '"coll"' | python3 -c "import sys,json;print(json.loads(sys.stdin.readline())['median_us'])")
    else
      v=$(mpirun.openmpi --allow-run-as-root -n 2 --bind-to none build/bench/mpi_coll.openmpi openmpi --pin --colls barrier --variants blocking --budget-ms 40 2>/dev/null | grep '"coll"' | python3 -c "import sys,json;print(json.loads(sys.stdin.readline())['median_us'])")
    fi
    b=$(build/bench/c2c 2>/dev/null | python3 -c "import sys,json;print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get('oneway_ns'))" 2>/dev/null)
    echo "$lib $a $b $v"
  done
done
