"""The Python API's errors: each mistake raises goal.Error with goal's code
and a message naming the call, the argument and the numbers. Prints
``OK rank R errors N``."""

from __future__ import annotations

import sys
import time

import numpy as np

import goal

count = 0


def raises(code: int, text: str, fn, *args, **kw) -> goal.Error:
    global count
    try:
        fn(*args, **kw)
    except goal.Error as e:
        assert e.code == code, f"{fn.__name__}: code {e.code} ({e}), wanted {code}"
        assert text in e.message, f"{fn.__name__}: {e.message!r} lacks {text!r}"
        assert str(e).endswith(f"[{e.name}]"), str(e)
        count += 1
        return e
    raise AssertionError(f"{getattr(fn, '__name__', fn)}{args} raised nothing, wanted {text!r}")


def main() -> None:
    raises(goal.ERR_NOT_INITIALIZED, "goal.world: called before goal was initialized", goal.world)
    goal.init()
    raises(goal.ERR_ALREADY_INITIALIZED, "already initialized", goal.init)
    w = goal.world()
    n, me = w.size, w.rank
    f4 = np.ones(4, np.float32)

    # bad ranks
    raises(goal.ERR_RANK, f"goal.bcast: root {n} is outside the group of {n} ranks", goal.bcast, f4, root=n)
    raises(goal.ERR_RANK, "goal.reduce_init: root -1 is outside", goal.reduce_init, f4, None, goal.SUM, -1)
    g = goal.Graph()
    g.send(f4, dest=n + 7)
    e = raises(goal.ERR_RANK, "Graph.compile:", g.compile)
    assert f"{n + 7}" in e.message and "vertex 0" in e.message, e.message
    raises(goal.ERR_RANK, "Group.create:", w.create, [me, n + 3])

    # too-small buffers
    raises(goal.ERR_INVALID_ARGUMENT, "goal.allreduce: recvbuf holds 8 bytes, fewer than the 16 it needs",
           goal.allreduce, f4, np.zeros(2, np.float32))
    if me == 0 and n > 1:
        raises(goal.ERR_INVALID_ARGUMENT, f"goal.gather: recvbuf holds 16 bytes, fewer than the {16 * n} it needs",
               goal.gather, f4, np.zeros(4, np.float32), 0)
    if n > 1:
        raises(goal.ERR_INVALID_ARGUMENT, "goal.allgatherv: counts has 1 entries for a group of",
               goal.allgatherv, f4, np.zeros(8, np.float32), [4])
    g = goal.Graph()
    g.recv(goal.runbuf(0, 64), source=me)
    g.send(goal.runbuf(1, 64), dest=me)
    s = g.compile()
    assert s.run_buffer_sizes == [64, 64], s.run_buffer_sizes
    raises(goal.ERR_INVALID_ARGUMENT, "Schedule.run: run-time buffer 1 holds 32 bytes, fewer than the 64",
           s.run, np.zeros(64, np.uint8), np.zeros(32, np.uint8))
    raises(goal.ERR_INVALID_ARGUMENT, "Schedule.run: schedule", s.run, np.zeros(64, np.uint8))

    # wrong dtypes and operators
    raises(goal.ERR_INVALID_ARGUMENT, "goal.allreduce: sendbuf is float32 but recvbuf is float64",
           goal.allreduce, f4, np.zeros(4, np.float64))
    raises(goal.ERR_INVALID_ARGUMENT, "GOAL_AND", goal.allreduce, f4, np.zeros(4, np.float32), goal.BAND)
    raises(goal.ERR_BAD_OP, f"goal.allreduce: op {goal.COPY} does not reduce", goal.allreduce, f4, op=goal.COPY)
    raises(goal.ERR_INVALID_ARGUMENT, "goal.iallreduce: algorithm 42 does not exist", goal.iallreduce, f4, alg=42)

    # arrays goal cannot use in place
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    raises(goal.ERR_INVALID_ARGUMENT, "goal.allreduce: recvbuf: ndarray offers no writable contiguous buffer",
           goal.allreduce, f4, ro)
    raises(goal.ERR_INVALID_ARGUMENT, "contiguous", goal.allreduce, np.ones(8, np.float32)[::2])
    raises(goal.ERR_INVALID_ARGUMENT, "goal.allreduce: sendbuf: int offers no contiguous buffer", goal.allreduce, 5, f4)
    big = np.ones(8, np.float32)
    raises(goal.ERR_INVALID_ARGUMENT, "goal.allreduce: sendbuf and recvbuf overlap", goal.allreduce, big[:4], big[2:6])
    raises(goal.ERR_INVALID_ARGUMENT, "goal.allreduce: sendbuf is goal.IN_PLACE but no recvbuf", goal.allreduce, goal.IN_PLACE)
    raises(goal.ERR_INVALID_ARGUMENT, "Group.split: color -2 is negative", w.split, -2)
    raises(goal.ERR_INVALID_ARGUMENT, "Group.free: the world group is never freed", w.free)

    # everything still works after the refusals (nothing was compiled by them
    # on one rank only)
    x = np.full(3, me + 1, np.int64)
    goal.allreduce(x)
    assert x.tolist() == [n * (n + 1) // 2] * 3, x

    # ranks that disagree on the size: goal says so instead of hanging
    if n > 1:
        y = np.ones(4 if me == 0 else 8, np.float32)
        try:
            goal.allreduce(y)
            outcome = "ok"
        except goal.Error as e:
            # the ranks that got a wrong size say so; one waiting on a rank
            # that already moved on says it left
            assert e.code in (goal.ERR_MISMATCH, goal.ERR_TRUNCATED, goal.ERR_PEER_LOST), str(e)
            outcome = e.name
        sys.stdout.write(f"SIZES rank {me} {outcome}\n")
    # a handle still running at finalize: its wait says so instead of hanging
    late = goal.ibarrier() if n > 1 and me == 0 else None
    if n > 1 and me != 0:
        time.sleep(0.3)  # rank 0 finalizes before the others join the barrier
    goal.finalize()
    if late is not None and not late.done:
        raises(goal.ERR_NOT_INITIALIZED, "goal.ibarrier: goal was finalized while this execution ran", late.wait)
    raises(goal.ERR_NOT_INITIALIZED, "goal.allreduce: called after goal was finalized", goal.allreduce, f4)
    sys.stdout.write(f"OK rank {me} errors {count}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
