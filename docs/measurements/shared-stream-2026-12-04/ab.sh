#!/bin/bash
# Alternates two goal installs (BASE, NEW) and Open MPI without single copy, N ranks
# pinned by the programs, R rounds (the goal order swapped every round), printing
# "LABEL COLL BYTES MEDIAN_US" lines and the core-to-core probe between rounds.
#
#   BASE=DIR NEW=DIR [SZ=1M] [C=alltoall,...] [N=4] [R=4] [B=250] ab.sh > ab.txt
#
# BASE_ENV and NEW_ENV (K=V ...) set variables for one side only: with BASE=NEW and
# the same program linked twice, the two sides compare settings of one install.
#
# Run from a directory holding, built by hand from bench/:
#   goal_coll_base, goal_coll_new   bench/goal_coll.c against each prefix (-Wl,-rpath,PREFIX/lib:
#                                   a program linked against one prefix loads that libgoal whatever
#                                   goalrun is used)
#   mpi_coll_ompi                   bench/mpi_coll.c with mpicc.openmpi
#   c2c                             bench/c2c.c
set -e
SZ=${SZ:-1M}; C=${C:-alltoall,alltoallv,allgather,allgatherv,bcast,gather,allreduce}; N=${N:-4}; R=${R:-4}
SEP=$(mktemp /dev/shm/ab-sep.XXXXXX)
trap 'rm -f $SEP' EXIT
row() { python3 -c '
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    if d.get("test") == "coll":
        print(sys.argv[1], d["coll"], d["bytes"], round(d["median_us"], 3), flush=True)' "$1"; }
run() { # LABEL PREFIX ENV
  head -c 4096 /dev/zero > "$SEP"
  env $3 "$2/bin/goalrun" -n "$N" "./goal_coll_$1" --pin --sep-file "$SEP" --colls "$C" --sizes "$SZ" --algs auto --budget-ms "${B:-250}" | row "$1"
}
for r in $(seq "$R"); do
  echo "c2c $(./c2c | grep -o '"oneway_ns": [0-9.]*')"
  if [ $((r % 2)) = 1 ]; then run base "$BASE" "$BASE_ENV"; run new "$NEW" "$NEW_ENV"; else run new "$NEW" "$NEW_ENV"; run base "$BASE" "$BASE_ENV"; fi
  head -c 4096 /dev/zero > "$SEP"
  mpirun.openmpi --allow-run-as-root --oversubscribe -n "$N" --bind-to none --mca btl_vader_single_copy_mechanism none \
      ./mpi_coll_ompi openmpi --pin --sep-file "$SEP" --colls "$C" --sizes "$SZ" --variants blocking --budget-ms "${B:-250}" | row ompi-nosc
done
echo "c2c $(./c2c | grep -o '"oneway_ns": [0-9.]*')"
