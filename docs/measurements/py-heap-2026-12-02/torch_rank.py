"""One rank of run.py's torch part: torch.distributed with the "goal"
backend on torch's own tensors and on goal_torch.empty's, alternated in
blocks of 50 calls; prints one JSON line per point from rank 0 (the median
over blocks of each block's mean time per call, the slowest rank's)."""

import json
import statistics
import sys
import time

import torch
import torch.distributed as dist

import goal_torch

dist.init_process_group("goal")
n, me = dist.get_world_size(), dist.get_rank()
sizes = [int(s) for s in sys.argv[1].split(",")]
blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 20
calls = {
    "allgather": lambda s, r: dist.all_gather_into_tensor(r, s),
    "alltoall": lambda s, r: dist.all_to_all_single(r, s),
    "allreduce": lambda s, r: dist.all_reduce(s),
}
for coll, fn in calls.items():
    for size in sizes:
        per = size // 4
        arrays = {}
        for kind, make in (("torch", lambda k: torch.empty(k)), ("goal_torch.empty", lambda k: goal_torch.empty(k))):
            s = make(per if coll != "alltoall" else n * per)
            r = make(n * per if coll != "allreduce" else 1)
            s.fill_(1)
            arrays[kind] = (s, r)
        times = {k: [] for k in arrays}
        for b in range(blocks):
            for kind in (arrays if b % 2 == 0 else list(arrays)[::-1]):
                s, r = arrays[kind]
                fn(s, r)
                dist.barrier()
                t = time.perf_counter()
                for _ in range(50):
                    fn(s, r)
                worst = torch.tensor([(time.perf_counter() - t) / 50])
                dist.all_reduce(worst, op=dist.ReduceOp.MAX)
                times[kind].append(float(worst[0]) * 1e6)
        if me == 0:
            med = {k: statistics.median(v) for k, v in times.items()}
            print(json.dumps({"api": "torch", "coll": coll, "bytes": size, "ranks": n, "median_us": med,
                              "heap_over_plain": med["goal_torch.empty"] / med["torch"]}), flush=True)
dist.destroy_process_group()
