"""Zero-copy, the GIL, graphs, and arrays of every kind. Prints
``OK rank R misc N``.

- zero-copy: results land in the caller's memory itself (a window of a
  larger array, a bytearray, a bfloat16 array, a persistent schedule's
  arrays rewritten between runs), never in a copy handed back;
- the GIL: a Python thread keeps running while this thread waits in goal;
  two threads run collectives at once, each on a group of its own;
- the cache: a shape compiles once, however often it is called;
- graphs: send, recv, local operations, requires, the scratchpad and
  run-time buffers, compiled once and run several times, on the world and
  on a split.
"""

from __future__ import annotations

import sys
import threading
import time

import ml_dtypes
import numpy as np

import goal
import checking
from checking import check


def zero_copy(w: goal.Group) -> None:
    n, me = w.size, w.rank
    total = n * (n + 1) // 2
    # a window of a larger array: only the window changes, in place
    big = np.full(10, -1.0)
    addr = big.__array_interface__["data"][0]
    goal.allreduce(np.full(4, me + 1.0), big[3:7])
    check(big.tolist() == [-1.0] * 3 + [float(total)] * 4 + [-1.0] * 3, f"window {big}")
    check(big.__array_interface__["data"][0] == addr, "the array moved")
    # a bytearray, seen through another view of the same memory
    ba = bytearray(8) if me != 0 else bytearray(b"zerocopy")
    alias = np.frombuffer(ba, np.uint8)
    goal.bcast(ba, root=0)
    check(bytes(ba) == b"zerocopy" and alias.tobytes() == b"zerocopy", f"bytearray {ba!r}")
    out = bytearray(n)
    goal.allgather(bytes([me]), out)
    check(list(out) == list(range(n)), f"allgather into bytearray {list(out)}")
    # bfloat16 (viewed as uint16 inside): the result is in the caller's array
    b16 = np.full(5, me + 1, ml_dtypes.bfloat16)
    view = b16.view(np.uint16)
    goal.allreduce(b16)
    check(b16.astype(np.float32).tolist() == [float(total)] * 5, f"bfloat16 {b16}")
    check(view.tobytes() == b16.tobytes(), "bfloat16 views differ")
    # a torch-like tensor (no buffer protocol; goal takes t.detach().numpy(),
    # which for a CPU tensor is the tensor's own memory)
    class FakeDtype:
        def __str__(self) -> str:
            return "torch.float32"

    class FakeTensor:
        def __init__(self, a: np.ndarray) -> None:
            self.a, self.dtype = a, FakeDtype()

        def detach(self) -> "FakeTensor":
            return self

        def numpy(self) -> np.ndarray:
            return self.a

    t = FakeTensor(np.full(3, me + 1, np.float32))
    goal.allreduce(t)
    check(t.a.tolist() == [float(total)] * 3, f"tensor {t.a}")
    # persistent: the schedule reads and writes the arrays themselves at each run
    x, y = np.zeros(3, np.int32), np.zeros(3, np.int32)
    s = goal.allreduce_init(x, y)
    yv = y[:]
    for it in range(3):
        x[:] = me * 10 + it
        s()
        check(yv.tolist() == [sum(r * 10 + it for r in range(n))] * 3, f"persistent run {it}: {y}")
    # a started collective: the caller's array holds the result once test() says so
    z = np.full(2, me + 1, np.int64)
    h = goal.iallreduce(z)
    while not h.test():
        pass
    check(z.tolist() == [total] * 2 and h.done, f"test() then read {z}")
    h.wait()  # again: returns at once


def cache(w: goal.Group) -> None:
    """One-shot calls compile once per shape: on a new group, 20 calls of two
    shapes (and a persistent schedule of one of them) compile 2 schedules,
    so the next compile there is number 2."""
    g = w.split(0, key=w.rank)
    first = goal.Graph(g).compile().id
    for it in range(10):
        goal.allreduce(np.full(8, it, np.float32), group=g)
        goal.allreduce(np.full(9, it, np.float32), group=g)
    s = goal.allreduce_init(np.zeros(8, np.float32), group=g)
    check(s.id == first + 1, f"the persistent schedule is the cached one: {s.id}")
    check(goal.Graph(g).compile().id == first + 3, "one compile per shape")
    g.free()


def gil(w: goal.Group) -> None:
    """Rank 0 joins a broadcast 0.5 s late; meanwhile the others' Python threads run."""
    if w.size < 2:
        return
    ticks = [0]
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            ticks[0] += 1

    for form in ("blocking", "handle"):
        buf = np.zeros(1 << 10, np.uint8)
        if w.rank == 0:
            time.sleep(0.5)
            buf[:] = 7
            goal.bcast(buf, 0)
            continue
        t = threading.Thread(target=spin)
        t.start()
        time.sleep(0.05)
        before = ticks[0]
        if form == "blocking":
            goal.bcast(buf, 0)
        else:
            goal.ibcast(buf, 0).wait()
        during = ticks[0] - before
        stop.set()
        t.join()
        stop.clear()
        check(buf[0] == 7 and during > 1000, f"{form}: the other thread ran {during} times while goal waited")


def threads(w: goal.Group) -> None:
    """Two Python threads, each with a group of its own, run collectives at
    once (goal takes calls from any thread; each group's calls stay in one
    order because one thread makes them)."""
    groups = [w.split(0, key=w.rank), w.split(0, key=w.rank)]
    errors: list[BaseException] = []

    def work(g: goal.Group, k: int) -> None:
        try:
            for it in range(50):
                x = np.full(64, g.rank + it + k, np.int64)
                if it % 2:
                    goal.iallreduce(x, group=g).wait()
                else:
                    goal.allreduce(x, group=g)
                want = sum(range(g.size)) + g.size * (it + k)
                if not (x == want).all():
                    raise AssertionError(f"thread {k} step {it}: {x[0]} != {want}")
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    ts = [threading.Thread(target=work, args=(g, k)) for k, g in enumerate(groups)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors, f"threads: {errors}")
    for g in groups:
        g.free()


def graphs(w: goal.Group) -> None:
    for g in (w, w.split(w.rank % 2, key=w.rank)):
        n, me = g.size, g.rank
        right, left = (me + 1) % n, (me - 1) % n
        src, out = np.zeros(4), np.zeros(4)
        gr = goal.Graph(g)
        gr.scratchpad = 32
        snd = gr.send(src, right, tag=3)
        rcv = gr.recv(goal.scratch(0, 32), left, tag=3)
        add = gr.local_op(goal.SUM, goal.scratch(0, 32), src, out)
        gr.requires(rcv, add)
        check(len(gr) == 3 and snd == 0, "vertex numbers")
        s = gr.compile()
        for it in range(3):
            src[:] = g.members[me] * 100 + it
            s.run().wait()
            check(out.tolist() == [g.members[left] * 100 + it + g.members[me] * 100 + it] * 4, f"ring {out}")
        # arrays only the graph refers to, a schedule only its handle: the
        # execution still has them (the handle holds them until it finished)
        got = goal.Graph(g)
        got.send(np.full(1 << 14, g.members[me], np.int64), right, tag=5)
        inbox = np.zeros(1 << 14, np.int64)
        got.recv(inbox, left, tag=5)
        h = got.compile().run()
        del got
        h.wait()
        check((inbox == g.members[left]).all(), f"temporary arrays {inbox[:2]}")
        # the same with run-time buffers: one schedule, new arrays each run
        gr = goal.Graph(g)
        gr.send(goal.runbuf(0, 16), right, tag=4)
        gr.recv(goal.runbuf(1, 16), left, tag=4)
        s = gr.compile()
        check(s.run_buffer_sizes == [16, 16], f"{s.run_buffer_sizes}")
        for it in range(2):
            a, b = np.full(2, g.members[me] + it, np.int64), np.zeros(2, np.int64)
            s(a, b)
            check(b.tolist() == [g.members[left] + it] * 2, f"runbuf ring {b}")
        if g is not w:
            g.free()


def main() -> None:
    goal.init()
    w = goal.world()
    zero_copy(w)
    cache(w)
    gil(w)
    threads(w)
    graphs(w)
    goal.finalize()
    sys.stdout.write(f"OK rank {w.rank} misc {checking.count}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
