#!/bin/bash
# peers_offsets.sh ROUNDS [OFFSETS]: bench/mpi_p2p.c's ping-pong (latency, 2 ranks, pinned by
# --pin, launcher binding off as bench/p2p.py runs it) under Open MPI and MPICH with the
# buffers OFFSET bytes past a page boundary. Prints one line per run: lib offset size:median_us ...
# MPI_BIN: the binaries' path without the .openmpi/.mpich suffix, built with each MPI's mpicc
# from bench/mpi_p2p.c (default build/bench/mpi_p2p, as bench/p2p.py builds them).
set -e
R=${1:-3}; OFFSETS=${2:-0,8}
MPI_BIN=${MPI_BIN:-build/bench/mpi_p2p}
run() {
  flock /work/cpu.lock "$@" 2>/dev/null | python3 -c "
import sys, json
r = [json.loads(l) for l in sys.stdin if l.startswith('{')]
r = [d for d in r if d.get('test') == 'latency' and 4096 <= d.get('bytes', 0) <= 1 << 20]
print(r[0]['lib'], '$off', ' '.join('%d:%.2f' % (d['bytes'], d['median_us']) for d in r))"
}
for i in $(seq "$R"); do for off in ${OFFSETS//,/ }; do
  run mpirun.openmpi --allow-run-as-root -n 2 --bind-to none "$MPI_BIN.openmpi" openmpi --pin --offset "$off" --tests latency
  run mpiexec.mpich -n 2 -bind-to none "$MPI_BIN.mpich" mpich --pin --offset "$off" --tests latency
done; done
