"""One rank of run.py: goal's Python collectives on numpy's arrays and on
goal.empty's, alternated in blocks of 50 calls; prints one JSON line per
point from rank 0 (the median over blocks of each block's mean time per
call, the slowest rank's)."""

import json
import statistics
import sys
import time

import numpy as np

import goal

goal.init()
w = goal.world()
n = w.size
sizes = [int(s) for s in sys.argv[1].split(",")]
blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 20
for coll in ("allgather", "alltoall", "allreduce"):
    for size in sizes:
        per = size // 4
        arrays = {}
        for kind, make in (("numpy", np.empty), ("goal.empty", goal.empty)):
            if coll == "allreduce":
                s, r = make(per, np.float32), make(per, np.float32)
            elif coll == "allgather":
                s, r = make(per, np.float32), make(n * per, np.float32)
            else:
                s, r = make(n * per, np.float32), make(n * per, np.float32)
            s[...] = 1
            arrays[kind] = (s, r)
        fn = getattr(goal, coll)
        times = {k: [] for k in arrays}
        for b in range(blocks):
            for kind in (arrays if b % 2 == 0 else list(arrays)[::-1]):
                s, r = arrays[kind]
                fn(s, r)
                goal.barrier()
                t = time.perf_counter()
                for _ in range(50):
                    fn(s, r)
                dt = (time.perf_counter() - t) / 50
                worst = np.array([dt])
                goal.allreduce(worst, op=goal.MAX)
                times[kind].append(float(worst[0]) * 1e6)
        if w.rank == 0:
            med = {k: statistics.median(v) for k, v in times.items()}
            print(json.dumps({"coll": coll, "bytes": size, "ranks": n, "median_us": med,
                              "heap_over_numpy": med["goal.empty"] / med["numpy"]}), flush=True)
goal.finalize()
