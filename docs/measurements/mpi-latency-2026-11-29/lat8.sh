#!/bin/bash
# lat8.sh MPI native|goal OP [ENV=V...]: lat8.c (built beside it as lat8.openmpi / lat8.mpich, mpicc.MPI -O2)
# across a goal-cluster named "lat" (goal-cluster up --name lat --hosts 2 --rails 1 --rate 1gbit);
# PFX: the goal prefix (default /work/pfx-mpi), N: iterations (5000), T: the goal-cluster binary.
mpi=$1; lib=$2; op=$3; shift 3
T=${T:-goal-cluster}; P=${PFX:-/work/pfx-mpi}
envs=("$@"); fl=()
[ $lib = goal ] && envs+=(LD_PRELOAD=$P/lib/libgoal-mpi-$mpi.so GOAL_RAILS=rail0)
for e in "${envs[@]}"; do if [ $mpi = openmpi ]; then fl+=(-x "$e"); else fl+=(-genv "${e%%=*}" "${e#*=}"); fi; done
if [ $mpi = openmpi ]; then head=(--mca btl tcp,self); extra=(); else head=(-genv UCX_TLS self,tcp); extra=(--mpich); fi
timeout 60 $T mpirun --name lat --np 2 --per-host 1 --rails 0 "${extra[@]}" -- "${head[@]}" "${fl[@]}" ./lat8.$mpi $op ${N:-5000} 2>&1 | grep "rank"
