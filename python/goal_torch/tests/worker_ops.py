"""One rank of the goal_torch operation test (test_goal_torch.py starts N of
them with torchrun's environment: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
set by the test, by goalrun, or on 2 emulated hosts).

Every backend operation x dtype x sync/async, on the world and on subgroups,
checked against the same operation computed here by hand from every rank's
input (each rank can rebuild any rank's data: inputs are a function of the
rank). Values are small integers, so sums and products are exact in every
dtype and the comparison is exact. Prints one line per failure and exits 1
if any; "ok N checks" otherwise.
"""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

import goal_torch  # registers "goal"

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32]
failures = []
checks = 0


def data(rank, n, dtype, salt=0):
    """Rank `rank`'s input: small integers, different per rank and element."""
    v = (torch.arange(n, dtype=torch.int64) * 3 + rank * 5 + salt) % 7 + 1
    return v.to(dtype)


def check(name, got, want):
    global checks
    checks += 1
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        failures.append(f"rank {dist.get_rank()}: {name}: got {got.tolist()[:8]} want {want.tolist()[:8]}")


def finish(work, async_op):
    """Waits for an async op (after overlapping some computation) and checks
    that its Work says so."""
    if not async_op:
        return
    a = torch.ones(64, 64)
    for _ in range(3):
        a = a @ a / 64
    work.wait()
    if not work.is_completed():
        failures.append(f"rank {dist.get_rank()}: Work.is_completed() false after wait()")


def run_ops(group, ranks, tag):
    """Every collective on `group`, whose members are the global `ranks` (this
    process is one of them)."""
    p = len(ranks)
    me = ranks.index(dist.get_rank())
    for dtype in DTYPES:
        for async_op in (False, True):
            name = lambda op: f"{tag} {op} {dtype} async={async_op}"  # noqa: E731
            n = 5
            allx = [data(r, n, dtype) for r in range(p)]
            stack = torch.stack(allx)
            ops = [(dist.ReduceOp.SUM, stack.sum(0)), (dist.ReduceOp.PRODUCT, stack.prod(0)),
                   (dist.ReduceOp.MIN, stack.min(0).values), (dist.ReduceOp.MAX, stack.max(0).values)]
            if dtype.is_floating_point:
                ops.append((dist.ReduceOp.AVG, (stack.double().sum(0) / p).to(dtype)))
            for op, want in ops:
                t = allx[me].clone()
                w = dist.all_reduce(t, op=op, group=group, async_op=async_op)
                finish(w, async_op)
                check(name(f"all_reduce {op}"), t, want.to(dtype))
            # A larger reduction (another algorithm).
            big = [data(r, 20000, dtype, 1) for r in range(p)]
            t = big[me].clone()
            finish(dist.all_reduce(t, group=group, async_op=async_op), async_op)
            check(name("all_reduce 20000"), t, torch.stack(big).sum(0).to(dtype))

            root = p - 1
            t = allx[me].clone()
            finish(dist.broadcast(t, src=ranks[root], group=group, async_op=async_op), async_op)
            check(name("broadcast"), t, allx[root])

            outs = [torch.zeros(n, dtype=dtype) for _ in range(p)]
            finish(dist.all_gather(outs, allx[me], group=group, async_op=async_op), async_op)
            check(name("all_gather"), torch.stack(outs), stack)
            out = torch.zeros(p * n, dtype=dtype)
            finish(dist.all_gather_into_tensor(out, allx[me], group=group, async_op=async_op), async_op)
            check(name("all_gather_into_tensor"), out, stack.reshape(-1))

            # reduce_scatter: rank r's input is p blocks of n; rank q gets block q summed.
            ins = [torch.stack([data(r, n, dtype, q) for q in range(p)]) for r in range(p)]
            want = torch.stack(ins).sum(0)[me].to(dtype)
            out = torch.zeros(n, dtype=dtype)
            finish(dist.reduce_scatter(out, list(ins[me].unbind(0)), group=group, async_op=async_op), async_op)
            check(name("reduce_scatter"), out, want)
            out = torch.zeros(n, dtype=dtype)
            finish(dist.reduce_scatter_tensor(out, ins[me].reshape(-1), group=group, async_op=async_op), async_op)
            check(name("reduce_scatter_tensor"), out, want)

            # all_to_all_single, equal blocks: rank r sends block q (n elements) to q.
            out = torch.zeros(p * n, dtype=dtype)
            finish(dist.all_to_all_single(out, ins[me].reshape(-1), group=group, async_op=async_op), async_op)
            check(name("all_to_all_single"), out, torch.cat([ins[r][me] for r in range(p)]))
            # With split sizes: rank r sends r + q + 1 rows of 2 to rank q.
            rows = lambda r, q: r + q + 1  # noqa: E731
            src = [torch.cat([data(r * 10 + q, 2 * rows(r, q), dtype).reshape(-1, 2) for q in range(p)])
                   for r in range(p)]
            insp = [rows(me, q) for q in range(p)]
            outsp = [rows(r, me) for r in range(p)]
            out = torch.zeros(sum(outsp), 2, dtype=dtype)
            finish(dist.all_to_all_single(out, src[me], outsp, insp, group=group, async_op=async_op), async_op)
            check(name("all_to_all_single splits"), out,
                  torch.cat([data(r * 10 + me, 2 * rows(r, me), dtype).reshape(-1, 2) for r in range(p)]))
            outs = [torch.zeros(rows(r, me) * 2, dtype=dtype) for r in range(p)]
            finish(dist.all_to_all(outs, [data(me * 10 + q, 2 * rows(me, q), dtype) for q in range(p)],
                                   group=group, async_op=async_op), async_op)
            check(name("all_to_all"), torch.cat(outs), torch.cat([data(r * 10 + me, 2 * rows(r, me), dtype)
                                                                   for r in range(p)]))

            groot = 1 % p
            outs = [torch.zeros(n, dtype=dtype) for _ in range(p)] if me == groot else None
            finish(dist.gather(allx[me], outs, dst=ranks[groot], group=group, async_op=async_op), async_op)
            if me == groot:
                check(name("gather"), torch.stack(outs), stack)
            out = torch.zeros(n, dtype=dtype)
            finish(dist.scatter(out, list(ins[0].unbind(0)) if me == 0 else None, src=ranks[0], group=group,
                                async_op=async_op), async_op)
            check(name("scatter"), out, ins[0][me])
            # Blocks of 64 KiB and more go as plain messages between the root
            # and each rank, the root's tensors used in place (no staging).
            nb = 40000
            bigs = [data(r, nb, dtype, 2) for r in range(p)]
            outs = [torch.zeros(nb, dtype=dtype) for _ in range(p)] if me == groot else None
            finish(dist.gather(bigs[me], outs, dst=ranks[groot], group=group, async_op=async_op), async_op)
            if me == groot:
                check(name("gather 40000"), torch.stack(outs), torch.stack(bigs))
            out = torch.zeros(nb, dtype=dtype)
            finish(dist.scatter(out, bigs if me == groot else None, src=ranks[groot], group=group,
                                async_op=async_op), async_op)
            check(name("scatter 40000"), out, bigs[me])

            for op, want in ops[:4:3] + ops[2:3]:  # SUM, MAX, MIN
                t = allx[me].clone()
                finish(dist.reduce(t, dst=ranks[root], op=op, group=group, async_op=async_op), async_op)
                if me == root:
                    check(name(f"reduce {op}"), t, want.to(dtype))

            finish(dist.barrier(group=group, async_op=async_op), async_op)

            # send/recv around the ring (isend/irecv for async, ordered for sync).
            if p > 1:
                nxt, prv = ranks[(me + 1) % p], ranks[(me - 1) % p]
                got = torch.zeros(n, dtype=dtype)
                if async_op:
                    ws = [dist.isend(allx[me], nxt, group=group, tag=3), dist.irecv(got, prv, group=group, tag=3)]
                    for w in ws:
                        w.wait()
                elif me % 2 == 0:
                    dist.send(allx[me], nxt, group=group)
                    dist.recv(got, prv, group=group)
                else:
                    dist.recv(got, prv, group=group)
                    dist.send(allx[me], nxt, group=group)
                check(name("send/recv"), got, allx[(me - 1) % p])


def background_completion(size):
    """An async all_reduce's Future completes while Python only sleeps (no
    wait, no is_completed: nothing of this thread drives goal), with the
    reduced tensor as its value."""
    global checks
    checks += 1
    # Every rank starts the clock together: the last rank comes from a group
    # of one, far ahead of the others under load (at 4 ranks on 2 cores it
    # waited more than 10 s for them, and failed, before this barrier).
    dist.barrier()
    t = torch.full((100000,), float(dist.get_rank() + 1))
    fut = dist.all_reduce(t, async_op=True).get_future()
    limit = 30
    deadline = time.time() + limit
    while not fut.done() and time.time() < deadline:
        time.sleep(0.001)
    if not fut.done():
        failures.append(f"rank {dist.get_rank()}: the Future of an async all_reduce is not done after {limit} s")
        return
    check("all_reduce Future value", fut.value()[0], torch.full((100000,), size * (size + 1) / 2))


def dropped_works(size):
    """async all_reduces whose Works are dropped unwaited (never waited, no
    Future asked for) still complete, with their sums in place, and the
    watcher releases them (their handles and tensors) once they end."""
    global checks
    checks += 1
    dist.barrier()
    ts = [torch.full((1000 + i,), float(dist.get_rank() + 1)) for i in range(20)]
    for t in ts:
        dist.all_reduce(t, async_op=True)  # the Work is dropped at once
    limit = 30
    deadline = time.time() + limit
    while goal_torch._C.tracked_works() > 0 and time.time() < deadline:
        time.sleep(0.005)
    left = goal_torch._C.tracked_works()
    if left:
        failures.append(f"rank {dist.get_rank()}: {left} dropped Works not released after {limit} s")
        return
    want = size * (size + 1) / 2
    for i, t in enumerate(ts):
        check(f"dropped all_reduce {i}", t, torch.full_like(t, want))


def expect_error(name, fn, words):
    global checks
    checks += 1
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        if words not in str(e):
            failures.append(f"rank {dist.get_rank()}: {name}: error {str(e)[:200]!r} does not say {words!r}")
        return
    failures.append(f"rank {dist.get_rank()}: {name}: no error")


def main():
    t0 = time.time()
    init = os.environ.get("GOAL_TORCH_TEST_INIT")  # e.g. tcp://127.0.0.1:PORT; default env://
    if init:
        dist.init_process_group("goal", init_method=init, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    else:
        dist.init_process_group("goal")
    size, rank = dist.get_world_size(), dist.get_rank()
    run_ops(None, list(range(size)), "world")
    # Subgroups: the first size-1 ranks, and a group of one (the last rank).
    # new_group is called by every rank, in the same order.
    sub_ranks = list(range(size - 1))
    sub = dist.new_group(sub_ranks)
    one = dist.new_group([size - 1])
    if rank in sub_ranks:
        run_ops(sub, sub_ranks, "group[0..%d]" % (size - 2))
    else:
        run_ops(one, [size - 1], "group[%d]" % (size - 1))
    background_completion(size)
    dropped_works(size)
    expect_error("AVG of int32", lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.AVG),
                 "AVG needs floating-point")
    expect_error("recv from any source", lambda: dist.recv(torch.ones(3)), "any source")
    expect_error("all_gather uneven", lambda: dist.all_gather([torch.ones(2)] * size, torch.ones(3)),
                 "different sizes")
    dist.barrier()
    dist.destroy_process_group()
    for f in failures[:40]:
        print(f, flush=True)
    # Where it ran and the store it used (MASTER_ADDR:MASTER_PORT, as goalrun
    # or the test set them), for the tests to check. One write, line and
    # newline together: under goalrun the ranks share one pipe, and print()
    # writes them apart when Python's output is unbuffered.
    store = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
    sys.stdout.write(f"rank {rank}: {'FAILED' if failures else 'ok'} {checks} checks, {len(failures)} failures, "
                     f"{time.time() - t0:.1f} s, host {socket.gethostname()}, store {store}\n")
    sys.stdout.flush()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
