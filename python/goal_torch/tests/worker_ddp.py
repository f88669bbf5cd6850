"""One rank of the goal_torch DDP test: DistributedDataParallel on CPU, a
small MLP on synthetic data, trained a few steps once over the goal backend
(the default group) and once over a Gloo group of the same ranks, in the
same process, from the same initial weights and data. DDP buckets the
gradients and all-reduces them asynchronously (Work.get_future) while the
backward pass runs.

The losses must agree step by step: bit for bit at 2 ranks (a sum of two
values does not depend on the order), within a relative 1e-5 at more ranks
(goal and Gloo add the ranks' gradients in different orders). The trained
weights must also be the same on every rank. Prints the losses; exits 1 on a
mismatch.
"""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import goal_torch  # noqa: F401

STEPS = 6


def train(group):
    torch.manual_seed(0)  # same initial weights on every rank and for both backends
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    # Small buckets: several all-reduces in flight per backward pass.
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.01)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + dist.get_rank())
    # One fixed batch per rank (a learnable target), so the loss falls.
    x = torch.randn(32, 16, generator=g)
    y = x[:, :4] * 0.5 + 0.1
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def main():
    dist.init_process_group("goal")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    goal_losses, goal_w = train(None)
    gloo_losses, gloo_w = train(gloo)
    ok = True
    print(f"rank {rank} goal: {goal_losses}\nrank {rank} gloo: {gloo_losses}", flush=True)
    for step, (a, b) in enumerate(zip(goal_losses, gloo_losses)):
        same = a == b if size == 2 else abs(a - b) <= 1e-5 * abs(b) + 1e-7
        if not same:
            print(f"rank {rank}: step {step}: goal loss {a!r} gloo loss {b!r}", flush=True)
            ok = False
    # Every rank ends with the same weights (DDP keeps replicas in step).
    ws = [torch.zeros_like(goal_w) for _ in range(size)]
    dist.all_gather(ws, goal_w)
    if any(not torch.equal(w, ws[0]) for w in ws):
        print(f"rank {rank}: the goal-trained replicas differ", flush=True)
        ok = False
    if not torch.allclose(goal_w, gloo_w, rtol=1e-4, atol=1e-6):
        print(f"rank {rank}: goal and gloo weights differ by {(goal_w - gloo_w).abs().max().item()}", flush=True)
        ok = False
    if goal_losses[-1] >= goal_losses[0]:
        print(f"rank {rank}: the loss did not go down: {goal_losses}", flush=True)
        ok = False
    dist.destroy_process_group()
    print(f"rank {rank}: ddp {'ok' if ok else 'FAILED'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
