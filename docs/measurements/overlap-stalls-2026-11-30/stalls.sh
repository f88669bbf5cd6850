#!/bin/bash
# stalls.sh PREFIX openmpi|mpich: one run of overlap.c's 1 MiB Iallreduce across the emulated
# cluster "lat" (goal-cluster up --name lat --hosts 2 --rails 1 --rate 1gbit) with libgoal-mpi
# and GOAL_TRACE_FILE; prints overlap.c's "none" row and, from goal's timeline, how long each
# execution took: the t_pure phase, and the overlapped phase's executions without progress calls
# ("none") and with them ("progress"), with how many of each took over 10 ms.
# T: the goal-cluster binary (default goal-cluster); GOAL_ENV: more K=V for the ranks; root.
P=$1; M=$2; T=${T:-goal-cluster}; O=$(mktemp --suffix=.json)
if [ "$M" = openmpi ]; then
  l=(-- --mca btl tcp,self -x LD_PRELOAD=$P/lib/libgoal-mpi-openmpi.so -x GOAL_RAILS=rail0 -x GOAL_TRACE_FILE=$O)
  for e in $GOAL_ENV; do l+=(-x "$e"); done
else
  l=(--mpich -- -genv UCX_TLS self,tcp -genv LD_PRELOAD $P/lib/libgoal-mpi-mpich.so -genv GOAL_RAILS rail0 -genv GOAL_TRACE_FILE $O)
  for e in $GOAL_ENV; do l+=(-genv "${e%%=*}" "${e#*=}"); done
fi
timeout 120 $T mpirun --name lat --np 2 --per-host 1 --rails 0 "${l[@]}" "$(dirname "$0")/../../../build/bench/mpi_overlap.$M" \
    --name x --tests overlap --ops allreduce:1M --budget-ms 2000 --pin > "$O.out" 2>&1
python3 - "$O" "$O.out" <<'PY'
import collections, json, statistics as S, sys
row = next(json.loads(l) for l in open(sys.argv[2]) if '"variant": "none"' in l)
print(f"overlap {row['overlap_pct']:.1f} %: t_pure {row['t_pure_us']:.0f} us, t_cpu {row['t_cpu_us']:.0f}, t_ovrl {row['t_ovrl_us']:.0f}")
d = json.load(open(sys.argv[1]))
by = collections.defaultdict(list)
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e["args"]["schedule"] == 0:
        by[e["args"]["execution"]].append(e)
ms = [(max(e["ts"] + e["dur"] for e in es) - min(e["ts"] for e in es)) / 1000 for _, es in sorted(by.items())]
# overlap.c: validation, t_pure's repetitions, then per repetition one "none" and one "progress"
over = ms[len(ms) - 2 * row["iters"]:]
none, prog = over[0::2], over[1::2]
print(f"t_pure phase median {S.median(ms[5:50]):.2f} ms; none: median {S.median(none):.2f} ms, "
      f"{sum(x > 10 for x in none)}/{len(none)} over 10 ms; progress: median {S.median(prog):.2f} ms, "
      f"{sum(x > 10 for x in prog)}/{len(prog)} over 10 ms")
PY
rm -f "$O" "$O.out"
