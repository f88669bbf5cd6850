"""One rank of the goal_torch background-progress test: all_reduce(async_op=True)
of 64 KiB and 1 MiB float32, then matrix products for COMPUTE_MS (many times
what the collective takes alone) with no call into torch.distributed, then a
look whether the collective has ended *before* wait() is called: the Work's
Future done, or Work.is_completed(), which only looks (GOAL_IsFinished) and
does not move the collective itself. So the collective must have been moved
by goal in the background while this rank computed. Then wait(), and the
sum is checked exactly. Exits 0 and prints "overlap ok" when every round
passed."""
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import goal_torch  # noqa: F401,E402

COMPUTE_MS = float(os.environ.get("GOAL_TORCH_TEST_COMPUTE_MS", "30"))
ROUNDS = 8

torch.set_num_threads(1)
dist.init_process_group("goal")
rank, size = dist.get_rank(), dist.get_world_size()
a, b, c = torch.rand(64, 64), torch.rand(64, 64), torch.empty(64, 64)


def compute(ms: float) -> None:
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        for _ in range(10):
            torch.mm(a, b, out=c)


failures = []
for nbytes in (64 << 10, 1 << 20):
    n = nbytes // 4
    x = torch.empty(n)
    want = torch.full((n,), float(size * (size + 1) // 2))
    for _ in range(3):  # compiles the schedule and warms up
        x.fill_(rank + 1)
        dist.all_reduce(x, async_op=True).wait()
    for r in range(ROUNDS):
        x.fill_(rank + 1)
        dist.barrier()
        w = dist.all_reduce(x, async_op=True)
        compute(COMPUTE_MS)
        done_future = w.get_future().done()
        done = done_future or w.is_completed()
        w.wait()
        if not done:
            failures.append(f"{nbytes} B round {r}: not finished after {COMPUTE_MS:.0f} ms of computation")
        if not torch.equal(x, want):
            failures.append(f"{nbytes} B round {r}: wrong sum {x[:4].tolist()}, want {want[:4].tolist()}")
dist.barrier()
dist.destroy_process_group()
for f in failures:
    print(f"rank {rank}: {f}", flush=True)
print(f"rank {rank}: {'overlap ok' if not failures else 'FAILED'}", flush=True)
sys.exit(1 if failures else 0)
