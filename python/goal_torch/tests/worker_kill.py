"""One rank of the goal_torch failure test: after a few all-reduces, the
last rank dies (os._exit) before the next; the others' all_reduce must
raise an error naming the lost rank within seconds, never hang (a rank
waiting only for a survivor raises when that one gives up and exits). Exits 0
when that happened (the dead rank exits 3, as planned)."""
import os
import sys
import time

import torch
import torch.distributed as dist

import goal_torch  # noqa: F401

dist.init_process_group("goal")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.ones(1000)
for _ in range(3):
    dist.all_reduce(t)
if rank == size - 1:
    os._exit(3)
t0 = time.time()
try:
    for _ in range(1000):
        dist.all_reduce(t)
    print(f"rank {rank}: all_reduce kept succeeding with rank {size - 1} dead", flush=True)
    sys.exit(1)
except RuntimeError as e:
    took = time.time() - t0
    msg = str(e)
    print(f"rank {rank}: raised after {took:.2f} s: {msg[:300]}", flush=True)
    # The error names the rank it lost: the dead one, or a survivor that
    # gave up (and exited) first while this rank was waiting for it.
    ok = took < 30 and "exited with status" in msg
    print(f"rank {rank}: {'kill ok' if ok else 'FAILED'}", flush=True)
    os._exit(0 if ok else 1)
