#!/bin/bash
# trace.sh PREFIX EXE OPS [openmpi]: one run of EXE (bench/overlap.c with marks.patch, built with
# mpicc.openmpi) across the emulated cluster "lat" (goal-cluster up --name lat --hosts 2 --rails 1
# --rate 1gbit) with libgoal-mpi, under a system-wide perf trace of scheduler switches, interrupts,
# soft interrupts, expiring hrtimers and the network system calls; then windows.py lays each rank's
# "none" repetitions over the trace. T: the goal-cluster binary (default goal-cluster). Root.
P=$1; EXE=$2; OPS=$3; T=${T:-goal-cluster}; D=$(mktemp -d)
perf record -q -a -k CLOCK_MONOTONIC -o "$D/perf.data" \
    -e sched:sched_switch -e irq:softirq_entry -e irq:softirq_exit \
    -e irq_vectors:local_timer_entry -e irq_vectors:local_timer_exit -e timer:hrtimer_expire_entry \
    -e syscalls:sys_enter_sendmsg -e syscalls:sys_enter_readv -e syscalls:sys_enter_futex -- \
  timeout 120 $T mpirun --name lat --np 2 --per-host 1 --rails 0 -- --mca btl tcp,self \
    -x LD_PRELOAD=$P/lib/libgoal-mpi-openmpi.so -x LD_LIBRARY_PATH=$P/lib -x GOAL_RAILS=rail0 -x OVERLAP_MARKS=$D \
    "$EXE" --name x --tests overlap --ops "$OPS" --budget-ms 2000 --pin 2>&1 | grep '"overlap"'
perf script -i "$D/perf.data" -F cpu,tid,time,event,trace 2>/dev/null > "$D/trace.txt"
python3 "$(dirname "$0")/windows.py" "$D"
rm -rf "$D"
