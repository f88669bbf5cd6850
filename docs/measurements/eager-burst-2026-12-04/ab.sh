#!/bin/bash
# Alternates two goal installs (BASE, NEW) and Open MPI without single copy in
# bench/goal_p2p.c's and bench/mpi_p2p.c's streaming test (windows of sends of
# 64 KiB to 16 MiB between 2 ranks pinned by the programs), R rounds, printing
# "C2C_BEFORE_NS C2C_AFTER_NS LABEL" and the test's "median_us gbps" pair per size.
#
#   BASE=DIR NEW=DIR [R=20] ab.sh > ab.txt
#
# Run from a directory holding, built by hand from bench/:
#   goal_p2p_base, goal_p2p_new   bench/goal_p2p.c against each prefix (-Wl,-rpath,PREFIX/lib:
#                                 a program linked against one prefix loads that libgoal whatever
#                                 goalrun is used)
#   mpi_p2p                       bench/mpi_p2p.c with mpicc.openmpi
#   c2c                           bench/c2c.c
set -e
R=${R:-20}
c2c() { ./c2c | grep -o '"oneway_ns": [0-9.]*' | awk '{print $2}'; }
pairs() { grep -o '"\(gbps\|median_us\)": [0-9.]*' | awk '{printf "%s ", $2}'; }
for r in $(seq "$R"); do
  for lab in base new ompi; do
    before=$(c2c)
    case $lab in
      base) out=$("$BASE/bin/goalrun" -n 2 ./goal_p2p_base --pin --tests bandwidth);;
      new)  out=$("$NEW/bin/goalrun" -n 2 ./goal_p2p_new --pin --tests bandwidth);;
      ompi) out=$(mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca btl self,vader \
                  --mca btl_vader_single_copy_mechanism none ./mpi_p2p ompi-nosc --pin --tests bandwidth);;
    esac
    echo "$before $(c2c) $lab $(echo "$out" | pairs)"
  done
done
