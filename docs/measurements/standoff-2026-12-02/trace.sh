#!/bin/bash
# trace.sh PREFIX OUT [COLL] [SIZE]: an ftrace of one sub-group point of bench/goal_groups.c
# (4 ranks on 2 CPUs, rank r pinned to CPU r % 2), with each rank's iteration start and end on
# the trace's clock. As root, from the source tree, with dump-times.patch applied to
# bench/groups_common.h and `goal bench groups` run once to build build/bench/goal_groups.
# Writes OUT.trace and OUT-COLL-rR.txt (start and end of each iteration, CLOCK_MONOTONIC s);
# read them with timeline.py OUT COLL.
P=$1; OUT=$2; C=${3:-alltoallv}; S=${4:-64K}; T=/sys/kernel/tracing; sep=/dev/shm/trace.$$
head -c 4096 /dev/zero > $sep
echo 0 > $T/tracing_on; echo mono > $T/trace_clock; echo > $T/trace; echo 20000 > $T/buffer_size_kb
echo > $T/set_event
for e in sched:sched_switch syscalls:sys_enter_process_vm_readv syscalls:sys_exit_process_vm_readv \
         syscalls:sys_enter_sched_yield; do
    echo $e >> $T/set_event
done
echo 1 > $T/tracing_on
DUMPABS=$OUT $P/bin/goalrun -n 4 build/bench/goal_groups --name goal --pin --tests coll --colls $C \
    --scopes sub --sizes $S --sep-file $sep --budget-ms 30 > /dev/null
echo 0 > $T/tracing_on
cat $T/trace > $OUT.trace
echo > $T/set_event; echo > $T/trace; echo local > $T/trace_clock; rm -f $sep
