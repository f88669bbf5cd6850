#!/bin/bash
# wall.sh PREFIX ROUNDS COLL SIZE: a sub-group point of bench/goal_groups.c and bench/mpi_groups.c
# (2 of 4 ranks, each rank pinned to CPU rank % 2), goal and Open MPI (blocking) in turn, three ways:
# the benchmark's median (over iterations, of the mean of the 4 ranks' own times), the mean of
# the same, and the wall time per iteration: (the time of a run of 22,000 iterations - one of
# 2,000) / 20,000, separator included. Run from the source tree after `make install PREFIX=...`
# and one `goal bench groups` (which builds build/bench/).
P=$1; R=$2; C=$3; S=$4; B=build/bench; sep=/dev/shm/wall.$$
run() { # lib iterations: "start end median mean"
    head -c 4096 /dev/zero > $sep
    local t0=$(date +%s.%N)
    if [ $1 = goal ]; then
        $P/bin/goalrun -n 4 $B/goal_groups --name goal --pin --tests coll --colls $C --scopes sub \
            --sizes $S --sep-file $sep --min-iters $2 --max-iters $2 --budget-ms 100000 > /tmp/wall.$$ 2>&1
    else
        mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 --bind-to none $B/mpi_groups.openmpi openmpi \
            --pin --tests coll --colls $C --scopes sub --sizes $S --variants blocking --sep-file $sep \
            --min-iters $2 --max-iters $2 --budget-ms 100000 > /tmp/wall.$$ 2>&1
    fi
    local t1=$(date +%s.%N)
    echo "$t0 $t1 $(grep '"coll"' /tmp/wall.$$ | python3 -c 'import sys,json; d=json.loads(sys.stdin.readline()); print(d["median_us"], d["mean_us"])')"
}
for i in $(seq $R); do
    for lib in goal openmpi; do
        a=($(run $lib 2000)); b=($(run $lib 22000))
        python3 -c "print('$lib $C $S: wall %.2f us/iteration, median %s, mean %s' % (((${b[1]} - ${b[0]}) - (${a[1]} - ${a[0]})) / 20000 * 1e6, '${b[2]}', '${b[3]}'))"
    done
done
rm -f $sep /tmp/wall.$$
