"""Every collective x dtype x group x form, checked against numpy by hand.

Run on N ranks (goalrun or torchrun's environment). Groups: the world, a
split (two colours, reversed key order), and this rank alone. Forms:
blocking, started (goal.iX + wait) and persistent (goal.X_init, run twice,
the second time on new data written into the same arrays). Prints one
``OK rank R checks N`` line; any wrong byte raises with the case named.
"""

from __future__ import annotations

import functools
import sys

import ml_dtypes
import numpy as np

import goal

DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64,
          np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
FLOAT_OPS = {"SUM": np.add, "PROD": np.multiply, "MIN": np.minimum, "MAX": np.maximum}
INT_OPS = {**FLOAT_OPS, "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}
FORMS = ["block", "start", "init"]

checks = 0


def is_int(dt) -> bool:
    return np.issubdtype(np.dtype(dt), np.integer)


def data(world_rank: int, n: int, dt, salt: int, op: str = "SUM") -> np.ndarray:
    """Small values whose sums and products are exact in every dtype."""
    i = np.arange(n)
    if op == "PROD":
        v = 1 + (world_rank + i + salt) % 2
    elif is_int(dt) and not np.issubdtype(np.dtype(dt), np.signedinteger):
        v = (world_rank * 7 + i * 3 + salt) % 11
    else:
        v = (world_rank * 7 + i * 3 + salt) % 11 - 5
    return v.astype(dt)


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    global checks
    checks += 1
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype == ml_dtypes.bfloat16 or w.dtype == ml_dtypes.bfloat16:
        g, w = g.astype(np.float64), w.astype(np.float64)
    if g.shape != w.shape or not np.array_equal(g, w):
        raise AssertionError(f"{what}: got {g.tolist()} want {w.tolist()}")


def run(name: str, form: str, *args, **kw):
    """One collective in one form; for `init`, returns the schedule to run again."""
    if form == "block":
        getattr(goal, name)(*args, **kw)
    elif form == "start":
        h = getattr(goal, "i" + name)(*args, **kw)
        assert isinstance(h, goal.Handle)
        h.wait()
        assert h.test()
    else:
        s = getattr(goal, name + "_init")(*args, **kw)
        s()
        return s
    return None


def reductions(g: goal.Group, gname: str, dt, form: str, salt: int) -> None:
    me, n, members = g.rank, g.size, g.members
    ops = INT_OPS if is_int(dt) else FLOAT_OPS
    for opname, fn in ops.items():
        op = getattr(goal, opname)
        case = f"{gname} {np.dtype(dt).name} {opname} {form}"
        count = 5
        contrib = lambda s, c=count: [data(w, c, dt, s, opname) for w in members]
        fold = lambda cs: functools.reduce(fn, cs)

        # allreduce, separate buffers; persistent: second run on new data
        x, y = data(members[me], count, dt, salt, opname), np.zeros(count, dt)
        s = run("allreduce", form, x, y, op, group=g)
        same(y, fold(contrib(salt)), f"allreduce {case}")
        if s is not None:
            x[:] = data(members[me], count, dt, salt + 1, opname)
            s()
            same(y, fold(contrib(salt + 1)), f"allreduce rerun {case}")
        # allreduce in place (no recvbuf) and with IN_PLACE
        z = data(members[me], count, dt, salt, opname)
        run("allreduce", form, z, op=op, group=g)
        same(z, fold(contrib(salt)), f"allreduce in place {case}")
        z = data(members[me], count, dt, salt, opname)
        run("allreduce", form, goal.IN_PLACE, z, op, group=g)
        same(z, fold(contrib(salt)), f"allreduce IN_PLACE {case}")

        # reduce at root n-1
        root = n - 1
        r = np.zeros(count, dt) if me == root else None
        run("reduce", form, x if form != "init" else data(members[me], count, dt, salt, opname), r, op, root, group=g)
        if me == root:
            same(r, fold(contrib(salt)), f"reduce {case}")

        # reduce_scatter_block: blocks of 2
        big = data(members[me], 2 * n, dt, salt, opname)
        out = np.zeros(2, dt)
        run("reduce_scatter_block", form, big, out, op, group=g)
        same(out, fold([data(w, 2 * n, dt, salt, opname) for w in members])[2 * me:2 * me + 2], f"reduce_scatter_block {case}")

        # reduce_scatter: rank i gets i+1 elements
        counts = [i + 1 for i in range(n)]
        tot = sum(counts)
        big = data(members[me], tot, dt, salt, opname)
        out = np.zeros(counts[me], dt)
        run("reduce_scatter", form, big, out, counts, op, group=g)
        at = sum(counts[:me])
        same(out, fold([data(w, tot, dt, salt, opname) for w in members])[at:at + counts[me]], f"reduce_scatter {case}")


def moves(g: goal.Group, gname: str, dt, form: str, salt: int) -> None:
    me, n, members = g.rank, g.size, g.members
    case = f"{gname} {np.dtype(dt).name} {form}"
    k = 3
    mine = data(members[me], k, dt, salt)
    every = [data(w, k, dt, salt) for w in members]

    root = n // 2
    b = mine.copy() if me == root else np.zeros(k, dt)
    run("bcast", form, b, root, group=g)
    same(b, every[root], f"bcast {case}")

    r = np.zeros(n * k, dt) if me == root else None
    run("gather", form, mine, r, root, group=g)
    if me == root:
        same(r, np.concatenate(every), f"gather {case}")

    src = np.concatenate([data(members[root], k, dt, salt + j) for j in range(n)]) if me == root else None
    out = np.zeros(k, dt)
    run("scatter", form, src, out, root, group=g)
    same(out, data(members[root], k, dt, salt + me), f"scatter {case}")

    out = np.zeros(n * k, dt)
    run("allgather", form, mine, out, group=g)
    same(out, np.concatenate(every), f"allgather {case}")

    # alltoall: block j of rank i is data(i, k, salt + j)
    send = np.concatenate([data(members[me], k, dt, salt + j) for j in range(n)])
    out = np.zeros(n * k, dt)
    run("alltoall", form, send, out, group=g)
    same(out, np.concatenate([data(members[i], k, dt, salt + me) for i in range(n)]), f"alltoall {case}")

    # v-collectives: rank i has i+1 elements; displacements with a gap of 1
    counts = [i + 1 for i in range(n)]
    displs = [sum(counts[:i]) + i for i in range(n)]
    span = displs[-1] + counts[-1]
    mine_v = data(members[me], counts[me], dt, salt)
    want_v = np.zeros(span, dt)
    for i in range(n):
        want_v[displs[i]:displs[i] + counts[i]] = data(members[i], counts[i], dt, salt)

    r = np.zeros(span, dt) if me == root else None
    run("gatherv", form, mine_v, r, counts, displs, root, group=g)
    if me == root:
        same(r, want_v, f"gatherv {case}")

    src = want_v.copy() if me == root else None
    out = np.zeros(counts[me], dt)
    run("scatterv", form, src, out, counts, displs, root, group=g)
    same(out, mine_v, f"scatterv {case}")

    out = np.zeros(sum(counts), dt)
    run("allgatherv", form, mine_v, out, counts, group=g)
    same(out, np.concatenate([data(members[i], counts[i], dt, salt) for i in range(n)]), f"allgatherv {case}")

    # alltoallv: rank i sends j+1 elements to rank j (data(i, j+1, salt + j))
    scounts = [j + 1 for j in range(n)]
    rcounts = [me + 1] * n
    send = np.concatenate([data(members[me], j + 1, dt, salt + j) for j in range(n)])
    out = np.zeros(sum(rcounts), dt)
    run("alltoallv", form, send, out, scounts, rcounts, group=g)
    same(out, np.concatenate([data(members[i], me + 1, dt, salt + me) for i in range(n)]), f"alltoallv {case}")

    run("barrier", form, group=g)


def main() -> None:
    goal.init()
    w = goal.world()
    groups = [("world", w),
              ("split", w.split(w.rank % 2, key=-w.rank)),
              ("alone", w.split(w.rank))]
    _, split = groups[1]
    assert split.size == (w.size + 1 - w.rank % 2) // 2, split
    assert split.members == sorted(split.members, reverse=True), split.members
    for gi, (gname, g) in enumerate(groups):
        for di, dt in enumerate(DTYPES):
            form = FORMS[(gi + di) % 3]
            reductions(g, gname, dt, form, salt=di)
            moves(g, gname, dt, form, salt=di)
    # every form on the world for float32 and bfloat16
    for form in FORMS:
        reductions(w, "world", np.float32, form, salt=7)
        moves(w, "world", ml_dtypes.bfloat16, form, salt=8)
    # every algorithm: a result as numpy says, or ERR_UNSUPPORTED on every rank
    algs = [a for a in dir(goal) if a.startswith("ALG_")]
    n, me = w.size, w.rank
    for name in algs:
        alg = getattr(goal, name)
        for coll in ("allreduce", "bcast", "reduce", "allgather", "alltoall", "reduce_scatter_block"):
            x = np.arange(4 * n, dtype=np.float64) + me
            try:
                if coll == "allreduce":
                    goal.allreduce(x, alg=alg)
                    same(x, n * np.arange(4 * n) + n * (n - 1) / 2, f"allreduce {name}")
                elif coll == "bcast":
                    goal.bcast(x, root=n - 1, alg=alg)
                    same(x, np.arange(4 * n) + n - 1, f"bcast {name}")
                elif coll == "reduce":
                    out = np.zeros(4 * n) if me == 0 else None
                    goal.reduce(x, out, goal.MAX, 0, alg=alg)
                    if me == 0:
                        same(out, np.arange(4 * n) + n - 1, f"reduce {name}")
                elif coll == "allgather":
                    out = np.zeros(4 * n * n)
                    goal.allgather(x, out, alg=alg)
                    same(out, np.concatenate([np.arange(4 * n) + r for r in range(n)]), f"allgather {name}")
                elif coll == "alltoall":
                    out = np.zeros(4 * n)
                    goal.alltoall(x, out, alg=alg)
                    same(out, np.concatenate([np.arange(4 * me, 4 * me + 4) + r for r in range(n)]), f"alltoall {name}")
                else:
                    out = np.zeros(4)
                    goal.reduce_scatter_block(x, out, alg=alg)
                    same(out, n * np.arange(4 * me, 4 * me + 4) + n * (n - 1) / 2, f"reduce_scatter_block {name}")
            except goal.Error as e:
                if e.code != goal.ERR_UNSUPPORTED:
                    raise
    # a large allreduce (segmented algorithms) and the cache: same shape twice
    n = 300_000
    x = np.full(n, w.rank + 1, np.float32)
    y = np.empty(n, np.float32)
    for _ in range(2):
        goal.allreduce(x, y)
        same(y, np.full(n, w.size * (w.size + 1) / 2, np.float32), "large allreduce")
    for _, g in groups[1:]:
        g.free()
    goal.finalize()
    sys.stdout.write(f"OK rank {w.rank} checks {checks}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
