"""One rank of test_goal_torch.py's heap test: tensors from goal_torch.empty
(goal's shared heap) all-reduced and all-gathered, checked element by
element; a view outliving its tensor; a tensor read and written after
goal_torch.finalize(). Prints "heap ok" (the test reads GOAL_TRACE_FILE's
timeline for how the bytes went)."""
import gc
import sys

import torch
import torch.distributed as dist

import goal_torch  # registers "goal"


def main():
    try:
        goal_torch.empty(4)
    except RuntimeError as e:
        assert "init_process_group" in str(e), e
    else:
        raise AssertionError("goal_torch.empty before init_process_group did not raise")
    dist.init_process_group("goal")
    n, me = dist.get_world_size(), dist.get_rank()

    t = goal_torch.empty(4, 1 << 16)  # 1 MiB of float32
    assert t.shape == (4, 1 << 16) and t.dtype == torch.float32 and t.data_ptr() % 64 == 0, (t.shape, t.dtype)
    t.fill_(me + 1)
    dist.all_reduce(t)
    assert bool((t == n * (n + 1) // 2).all()), t.flatten()[:4]

    per = 1 << 18
    mine = goal_torch.empty(per, dtype=torch.int32)
    mine.copy_(torch.arange(per, dtype=torch.int32) + me * per)
    everyone = goal_torch.empty(n * per, dtype=torch.int32)
    dist.all_gather_into_tensor(everyone, mine)
    assert torch.equal(everyone, torch.arange(n * per, dtype=torch.int32)), everyone[:4]
    assert goal_torch.empty(0, 3, dtype=torch.float64).shape == (0, 3)
    try:
        goal_torch.empty(2, -1)
    except ValueError as e:
        assert "negative" in str(e), e
    else:
        raise AssertionError("goal_torch.empty(2, -1) did not raise")

    b = goal_torch.empty(1024, dtype=torch.uint8)
    b.fill_(5)
    view = b[10:20]
    del b
    gc.collect()
    assert bool((view == 5).all()), view

    kept = goal_torch.empty(4096, dtype=torch.int64)
    kept.copy_(torch.arange(4096) + me)
    dist.barrier()
    dist.destroy_process_group()
    goal_torch.finalize()
    assert torch.equal(kept, torch.arange(4096) + me), "a tensor read after goal_torch.finalize()"
    kept[0] = 99
    assert int(kept[0]) == 99, "a tensor written after goal_torch.finalize()"
    del kept, view, t, mine, everyone
    gc.collect()
    print(f"rank {me}: heap ok", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL {e}", flush=True)
        sys.exit(1)
