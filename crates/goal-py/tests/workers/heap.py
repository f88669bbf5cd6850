"""Arrays in the shared heap (goal.empty, goal.zeros). Prints ``OK rank R heap N``.

- shape, dtype, alignment, writability; zeros is zeros; bad shapes refused;
- an allgather and an alltoall of 1 MiB per rank between heap arrays, and
  one from a heap array into an ordinary one, checked element by element
  (the test reads GOAL_TRACE_FILE's timeline for how the bytes went);
- a view outlives its array: the memory stays until the last view goes;
- an array kept past goal.finalize() still holds its bytes and takes writes.
"""

from __future__ import annotations

import gc
import sys

import numpy as np

import goal
import checking
from checking import check


def main() -> None:
    try:
        goal.empty(4)
    except goal.Error as e:
        check("goal.empty" in str(e), f"before init: {e}")
    else:
        raise AssertionError("goal.empty before goal.init() did not raise")
    goal.init()
    w = goal.world()
    n, me = w.size, w.rank

    a = goal.empty((3, 5), np.float32)
    check(a.shape == (3, 5) and a.dtype == np.float32, f"shape {a.shape} dtype {a.dtype}")
    check(a.flags.writeable and a.ctypes.data % 64 == 0, f"writable {a.flags.writeable} at {a.ctypes.data:#x}")
    a[...] = 7
    check(float(a.sum()) == 105.0, "writes")
    z = goal.zeros(1000, "int64")
    check(z.shape == (1000,) and not z.any(), "zeros")
    check(goal.empty(0).size == 0, "an empty array")
    try:
        goal.empty((2, -1))
    except ValueError as e:
        check("negative" in str(e), f"negative: {e}")
    else:
        raise AssertionError("goal.empty((2, -1)) did not raise")

    per = (1 << 20) // 4  # 1 MiB of float32 per rank
    mine = goal.empty(per, np.float32)
    mine[:] = np.arange(per, dtype=np.float32) + me * per
    everyone = goal.empty(n * per, np.float32)
    goal.allgather(mine, everyone)
    check(np.array_equal(everyone, np.arange(n * per, dtype=np.float32)), "allgather between heap arrays")
    plain = np.empty(n * per, np.float32)
    goal.allgather(mine, plain)
    check(np.array_equal(plain, everyone), "allgather from the heap into numpy's memory")

    blk = (1 << 20) // 8
    send = goal.empty((n, blk), np.int64)
    for r in range(n):
        send[r] = me * 1000 + r
    recv = goal.zeros((n, blk), np.int64)
    goal.alltoall(send, recv)
    for r in range(n):
        check(bool((recv[r] == r * 1000 + me).all()), f"alltoall block from rank {r}")

    # A view keeps the block: the array goes, the view still reads its bytes.
    b = goal.empty(1024, np.uint8)
    b[:] = 5
    view = b[10:20]
    del b
    gc.collect()
    check(bool((view == 5).all()), "a view after its array was dropped")

    kept = goal.empty(4096, np.uint32)
    kept[:] = np.arange(4096, dtype=np.uint32) + me
    goal.barrier()
    goal.finalize()
    check(bool((kept == np.arange(4096, dtype=np.uint32) + me).all()), "an array read after goal.finalize()")
    kept[0] = 99
    check(int(kept[0]) == 99, "an array written after goal.finalize()")
    del kept, view, a, z, mine, everyone, send, recv
    gc.collect()
    print(f"OK rank {me} heap {checking.count}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL {e}", flush=True)
        sys.exit(1)
