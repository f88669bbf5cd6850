#!/usr/bin/env python3
"""One rank of `goal bench torch` (bench/torch.py starts one process per rank, locally or on
emulated hosts, with torchrun's variables MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE).

    RANK=r WORLD_SIZE=n MASTER_ADDR=... MASTER_PORT=... python3 bench/torch_rank.py --sep-file F [...]

The process holds two process groups over the same ranks: the default group on backend
"goal" (goal_torch) and `dist.new_group(backend="gloo")`, and measures each operation on both,
alternating which goes first from round to round, so that whatever disturbs the machine in a
round disturbs both. Control traffic (iteration counts, gathering the times) goes over a third
group, also Gloo, never timed.

- colls: every backend collective, float32, size = one rank's block in bytes (the tensor of
  all_reduce, broadcast and reduce; each rank's block of all_gather_into_tensor, gather,
  scatter, reduce_scatter_tensor and all_to_all_single; the message of send/recv). Each point is
  validated once on each backend with known data before it is timed. Every rank times each
  call (time.perf_counter_ns around the blocking call); before each timed call of the
  operations that do not synchronise the group (broadcast, gather, scatter, reduce) and of
  send/recv every rank enters a shared-memory barrier of this benchmark's own (--sep-file),
  the same for both backends. The times are averaged over the ranks per iteration, and the
  median over every iteration of every round is the point's value. send/recv is a ping-pong
  between ranks 2k and 2k+1 (all pairs at once): the value is half the round trip the even
  ranks measured. Iterations per round: clamp(budget / estimate, min, max), per backend.
- overlap: the IMB-NBC method for all_reduce(async_op=True): t_pure (start + wait), t_cpu
  (the computation alone: k products of two MxM float32 matrices, k calibrated so that they
  take t_pure), t_ovrl (start, the k products, wait; no call into the backend in between);
  each the median over iterations per rank, then the maximum over ranks; overlap % =
  100 max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu))).
- ddp: DistributedDataParallel (torch's default buckets) over each group, a small MLP on a
  fixed synthetic batch per rank, SGD; every rank times each step (forward, backward with
  DDP's bucketed asynchronous all-reduces, optimizer step), mean over ranks per step, median
  over the steps after warm-up. Both models start from the same weights and see the same data,
  so their losses must agree step by step (bit for bit at 2 ranks).

Rank 0 prints one JSON object per line: {"test": "meta"}, then "coll", "overlap", "ddp" rows
(bench/torch.py reads them). Any failure raises, naming the operation, backend and size.
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import sys
import time

# bench/torch.py sits beside this file: without this, `import torch` would find it.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]

OPS = ["all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
       "gather", "scatter", "reduce", "barrier", "send_recv"]
# Operations after which every rank has heard from every other: no separator before them.
SYNCS = {"all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single", "barrier"}
BACKENDS = ["goal", "gloo"]
ROOT = 0
SEP_TIMEOUT_S = 120.0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sep-file", help="the shared-memory separator's file (a page of zeros, new per job)")
    ap.add_argument("--parts", default="colls,overlap,ddp", help="what to measure (default all three)")
    ap.add_argument("--ops", default=",".join(OPS), help="operations of colls")
    ap.add_argument("--sizes", default="8,1024,65536,1048576,33554432", help="bytes per rank's block")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each backend once per round and point")
    ap.add_argument("--budget-ms", type=float, default=100.0, help="time per point, backend and round")
    ap.add_argument("--min-iters", type=int, default=5)
    ap.add_argument("--max-iters", type=int, default=300)
    ap.add_argument("--overlap-sizes", default="65536,1048576")
    ap.add_argument("--overlap-iters", type=int, default=30, help="iterations per phase, backend and round")
    ap.add_argument("--matrix", type=int, default=32, help="M of the MxM products of the computation")
    ap.add_argument("--ddp-steps", type=int, default=10, help="timed steps per backend and round")
    ap.add_argument("--ddp-warmup", type=int, default=5, help="untimed steps per backend first")
    ap.add_argument("--pin", action="store_true", help="pin this rank (all its threads) to one CPU")
    ap.add_argument("--setup", default="local", help="a name for the rows")
    return ap.parse_args()


def pin(rank: int) -> int | None:
    """All threads of this rank (those started later inherit it) on one allowed CPU, rank r on
    the (r mod n)-th; returns it."""
    cpus = sorted(os.sched_getaffinity(0))
    cpu = cpus[rank % len(cpus)]
    os.sched_setaffinity(0, {cpu})
    return cpu


class Separator:
    """A barrier of the ranks of one job in a page of shared memory, no library's: rank r
    writes only its own slot (8 bytes at 64 r, a cache line each), the count of separators it
    entered, then waits until every slot has reached it, yielding the CPU between looks
    (ranks may share CPUs). The same for both backends, so neither's own barrier decides which
    rank starts first (bench/separator.h's argument; this is its Python twin)."""

    def __init__(self, path: str, rank: int, size: int):
        if size * 64 > 4096:
            raise RuntimeError(f"separator: {size} ranks do not fit in one page (64 at most)")
        with open(path, "r+b") as f:
            self.mm = mmap.mmap(f.fileno(), 4096)
        self.slots = memoryview(self.mm).cast("q")
        self.rank, self.size, self.count = rank, size, 0

    def __call__(self) -> None:
        self.count += 1
        k = self.count
        self.slots[8 * self.rank] = k
        deadline = None
        while True:
            if all(self.slots[8 * r] >= k for r in range(self.size)):
                return
            os.sched_yield()
            if deadline is None:
                deadline = time.monotonic() + SEP_TIMEOUT_S
            elif time.monotonic() > deadline:
                late = [r for r in range(self.size) if self.slots[8 * r] < k]
                raise RuntimeError(f"separator: ranks {late} did not arrive within {SEP_TIMEOUT_S:.0f} s")


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def main() -> int:
    a = parse_args()
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    cpu = pin(rank) if a.pin else None
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    import torch.distributed as dist

    import goal_torch  # noqa: F401  (registers "goal")

    torch.set_num_threads(1)
    dist.init_process_group("goal")
    groups = {"goal": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    ctl = dist.new_group(backend="gloo")  # never timed: counts, times
    sep = Separator(a.sep_file, rank, size)
    bench = Bench(a, torch, dist, groups, ctl, sep, rank, size)
    if rank == 0:
        emit({"test": "meta", "setup": a.setup, "ranks": size, "torch": torch.__version__,
              "goal_torch": goal_torch.__file__, "libgoal": libgoal_path(), "pinned_cpu": cpu,
              "hostname": os.uname().nodename})
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    if "colls" in parts:
        bench.colls()
    if "overlap" in parts:
        bench.overlap()
    if "ddp" in parts:
        bench.ddp()
    dist.barrier(group=ctl)
    if rank == 0:
        emit({"test": "done"})
    dist.destroy_process_group()
    return 0


def libgoal_path() -> str | None:
    """The libgoal.so this process loaded (through goal_torch's rpath)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libgoal.so" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def sizes_of(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


class Bench:
    """The measurements of one rank; see the module's doc for the method."""

    def __init__(self, a, torch, dist, groups, ctl, sep, rank, size):
        self.a, self.torch, self.dist = a, torch, dist
        self.groups, self.ctl, self.sep = groups, ctl, sep
        self.rank, self.size = rank, size

    # -- control (over the untimed Gloo group) ------------------------------------------

    def agree_max(self, values: list[float]) -> list[float]:
        t = self.torch.tensor(values, dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX, group=self.ctl)
        return t.tolist()

    def gather(self, obj):
        """obj of every rank, at rank 0 (None elsewhere)."""
        out = [None] * self.size if self.rank == 0 else None
        self.dist.gather_object(obj, out, dst=0, group=self.ctl)
        return out

    def order(self, rnd: int) -> list[str]:
        return BACKENDS if rnd % 2 == 0 else BACKENDS[::-1]

    # -- collectives --------------------------------------------------------------------

    def colls(self) -> None:
        a = self.a
        for op in [o.strip() for o in a.ops.split(",") if o.strip()]:
            if op not in OPS:
                raise SystemExit(f"torch_rank.py: unknown operation {op!r} (known: {', '.join(OPS)})")
            for nbytes in ([0] if op == "barrier" else sizes_of(a.sizes)):
                self.coll_point(op, nbytes)

    def coll_point(self, op: str, nbytes: int) -> None:
        a, torch = self.a, self.torch
        case = OpCase(op, nbytes, self)
        for be in BACKENDS:
            errs = [None] * self.size
            self.dist.all_gather_object(errs, case.validate(self.groups[be]), group=self.ctl)
            if any(errs):  # every rank stops, not only the one that saw it
                raise RuntimeError(f"{op} {nbytes} B on {be}: wrong result: "
                                   + "; ".join(f"rank {r}: {e}" for r, e in enumerate(errs) if e))
        case.zero()
        sync = op in SYNCS
        est = []
        for be in BACKENDS:
            call = case.call(self.groups[be])
            for _ in range(2):
                self.timed(call, sync)
            est.append(statistics.median(self.timed(call, sync) for _ in range(3)))
        est = self.agree_max(est)
        iters = {be: max(a.min_iters, min(a.max_iters, int(a.budget_ms * 1e3 / max(e, 1.0))))
                 for be, e in zip(BACKENDS, est)}
        times = {be: [] for be in BACKENDS}
        for rnd in range(a.rounds):
            for be in self.order(rnd):
                call = case.call(self.groups[be])
                times[be].append([self.timed(call, sync) for _ in range(iters[be])])
        every = self.gather(times)
        del case
        if self.rank != 0:
            return
        for be in BACKENDS:
            per_rank = [t[be] for t in every]  # [rank][round][iteration]
            rounds = []
            for k in range(a.rounds):
                cols = [per_rank[r][k] for r in range(self.size)]
                if op == "send_recv":  # half the round trip, as the even ranks saw it
                    cols = [[x / 2 for x in c] for r, c in enumerate(cols) if r % 2 == 0 and r + 1 < self.size]
                rounds.append([sum(xs) / len(xs) for xs in zip(*cols)])
            flat = sorted(x for r in rounds for x in r)
            q = statistics.quantiles(flat, n=4) if len(flat) > 1 else flat * 3
            emit({"test": "coll", "setup": a.setup, "ranks": self.size, "op": op, "bytes": nbytes,
                  "backend": be, "median_us": statistics.median(flat), "p25_us": q[0], "p75_us": q[2],
                  "min_us": flat[0], "iters": len(flat), "rounds": a.rounds,
                  "round_median_us": [statistics.median(r) for r in rounds],
                  "rank_median_us": [statistics.median(x for k in per_rank[r] for x in k)
                                     for r in range(self.size)],
                  "separator": op not in SYNCS, "verified": True})

    def timed(self, call, sync: bool) -> float:
        """One call, timed on this rank, in us; the separator first where the op needs it."""
        if not sync:
            self.sep()
        t0 = time.perf_counter_ns()
        call()
        return (time.perf_counter_ns() - t0) / 1e3

    # -- overlap (IMB-NBC) ----------------------------------------------------------------

    def overlap(self) -> None:
        a, torch, dist = self.a, self.torch, self.dist
        m = a.matrix
        ma, mb, mc = torch.rand(m, m), torch.rand(m, m), torch.empty(m, m)

        def products(k):
            for _ in range(k):
                torch.mm(ma, mb, out=mc)

        products(200)  # warm up
        one = statistics.median(self.stamp(lambda: products(20)) for _ in range(15)) / 20
        one = self.agree_max([one])[0]  # us per product, the slowest rank's
        for nbytes in sizes_of(a.overlap_sizes):
            x = torch.zeros(nbytes // 4)
            starts = {be: (lambda g: lambda: dist.all_reduce(x, group=g, async_op=True))(self.groups[be])
                      for be in BACKENDS}
            for be in BACKENDS:  # warm up (and compile) each
                for _ in range(3):
                    starts[be]().wait()
            phases = {be: {"pure": [], "cpu": [], "ovrl": []} for be in BACKENDS}
            for rnd in range(a.rounds):
                for be in self.order(rnd):
                    phases[be]["pure"] += [self.sep_stamp(lambda: starts[be]().wait())
                                           for _ in range(a.overlap_iters)]
            pure = self.agree_max([statistics.median(phases[be]["pure"]) for be in BACKENDS])
            ks = {be: max(1, round(p / one)) for be, p in zip(BACKENDS, pure)}
            for rnd in range(a.rounds):
                for be in self.order(rnd):
                    k = ks[be]
                    phases[be]["cpu"] += [self.sep_stamp(lambda: products(k)) for _ in range(a.overlap_iters)]

                    def ovrl():
                        w = starts[be]()
                        products(k)
                        w.wait()
                    phases[be]["ovrl"] += [self.sep_stamp(ovrl) for _ in range(a.overlap_iters)]
            meds = {be: {ph: statistics.median(v) for ph, v in d.items()} for be, d in phases.items()}
            every = self.gather(meds)
            if self.rank != 0:
                continue
            for be in BACKENDS:
                t = {ph: max(e[be][ph] for e in every) for ph in ("pure", "cpu", "ovrl")}
                ov = 100 * max(0.0, min(1.0, (t["pure"] + t["cpu"] - t["ovrl"]) / min(t["pure"], t["cpu"])))
                emit({"test": "overlap", "setup": a.setup, "ranks": self.size, "op": "all_reduce",
                      "bytes": nbytes, "backend": be, "t_pure_us": t["pure"], "t_cpu_us": t["cpu"],
                      "t_ovrl_us": t["ovrl"], "overlap_pct": ov, "products": ks[be], "matrix": m,
                      "product_us": one, "iters": a.overlap_iters * a.rounds})

    def stamp(self, fn) -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e3

    def sep_stamp(self, fn) -> float:
        self.sep()
        return self.stamp(fn)

    # -- DDP --------------------------------------------------------------------------------

    def ddp(self) -> None:
        a, torch = self.a, self.torch
        nn = torch.nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        def make(group):
            torch.manual_seed(0)  # the same initial weights on every rank and for both backends
            net = nn.Sequential(nn.Linear(DDP_IN, DDP_HIDDEN), nn.ReLU(), nn.Linear(DDP_HIDDEN, DDP_HIDDEN),
                                nn.ReLU(), nn.Linear(DDP_HIDDEN, DDP_OUT))
            model = DDP(net, process_group=group)
            return model, torch.optim.SGD(model.parameters(), lr=0.01)

        gen = torch.Generator().manual_seed(100 + self.rank)
        x = torch.randn(DDP_BATCH, DDP_IN, generator=gen)
        y = torch.randn(DDP_BATCH, DDP_OUT, generator=gen)
        models = {be: make(self.groups[be]) for be in BACKENDS}
        losses = {be: [] for be in BACKENDS}

        def step(be):
            model, opt = models[be]
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses[be].append(loss.item())

        for be in BACKENDS:
            for _ in range(a.ddp_warmup):
                step(be)
        times = {be: [] for be in BACKENDS}
        for rnd in range(a.rounds):
            for be in self.order(rnd):
                times[be].append([self.sep_stamp(lambda: step(be)) for _ in range(a.ddp_steps)])
        every = self.gather(times)
        params = sum(p.numel() for p in models["goal"][0].parameters())
        if self.rank != 0:
            return
        la, lb = losses["goal"], losses["gloo"]
        tol = 0.0 if self.size == 2 else 1e-5
        agree = all(abs(p - q) <= tol * abs(q) for p, q in zip(la, lb))
        for be in BACKENDS:
            steps = [sum(xs) / len(xs) for k in range(a.rounds) for xs in zip(*[e[be][k] for e in every])]
            steps = sorted(x / 1e3 for x in steps)
            q = statistics.quantiles(steps, n=4) if len(steps) > 1 else steps * 3
            emit({"test": "ddp", "setup": a.setup, "ranks": self.size, "backend": be,
                  "step_ms": statistics.median(steps), "p25_ms": q[0], "p75_ms": q[2], "steps": len(steps),
                  "warmup": a.ddp_warmup, "params": params, "grad_mib": params * 4 / (1 << 20),
                  "model": f"MLP {DDP_IN}-{DDP_HIDDEN}-{DDP_HIDDEN}-{DDP_OUT}, batch {DDP_BATCH}, SGD",
                  "losses_agree": agree, "loss_first": losses[be][0], "loss_last": losses[be][-1]})


DDP_IN, DDP_HIDDEN, DDP_OUT, DDP_BATCH = 512, 1024, 16, 64


class OpCase:
    """The tensors of one (operation, size) on this rank, shared by both backends: `call(group)`
    is the timed call; `validate(group)` fills known data, runs it once and says what is wrong
    (None if nothing); `zero()` leaves zeros for the timed calls (repeated in-place sums of
    zeros stay zeros: no overflow, no denormals)."""

    def __init__(self, op: str, nbytes: int, b: Bench):
        torch = b.torch
        self.op, self.b, self.torch, self.dist = op, b, torch, b.dist
        p, me = b.size, b.rank
        n = max(1, nbytes // 4)
        self.n, self.p, self.me = n, p, me
        z = lambda k: torch.zeros(k, dtype=torch.float32)  # noqa: E731
        if op in ("all_reduce", "broadcast", "reduce"):
            self.x = z(n)
        elif op == "all_gather_into_tensor":
            self.x, self.out = z(n), z(p * n)
        elif op in ("reduce_scatter_tensor", "all_to_all_single"):
            self.x, self.out = z(p * n), z(n if op == "reduce_scatter_tensor" else p * n)
        elif op == "gather":
            self.x = z(n)
            self.big = z(p * n) if me == ROOT else None
        elif op == "scatter":
            self.out = z(n)
            self.big = z(p * n) if me == ROOT else None
        elif op == "send_recv":
            self.x, self.out = z(n), z(n)
            self.peer = me ^ 1 if (me ^ 1) < p else None

    def zero(self) -> None:
        for t in (getattr(self, k, None) for k in ("x", "out", "big")):
            if t is not None:
                t.zero_()

    def call(self, g):
        d, op = self.dist, self.op
        if op == "all_reduce":
            return lambda: d.all_reduce(self.x, group=g)
        if op == "broadcast":
            return lambda: d.broadcast(self.x, src=ROOT, group=g)
        if op == "reduce":
            return lambda: d.reduce(self.x, dst=ROOT, group=g)
        if op == "all_gather_into_tensor":
            return lambda: d.all_gather_into_tensor(self.out, self.x, group=g)
        if op == "reduce_scatter_tensor":
            return lambda: d.reduce_scatter_tensor(self.out, self.x, group=g)
        if op == "all_to_all_single":
            return lambda: d.all_to_all_single(self.out, self.x, group=g)
        if op == "gather":
            blocks = list(self.big.view(self.p, self.n).unbind(0)) if self.big is not None else None
            return lambda: d.gather(self.x, blocks, dst=ROOT, group=g)
        if op == "scatter":
            blocks = list(self.big.view(self.p, self.n).unbind(0)) if self.big is not None else None
            return lambda: d.scatter(self.out, blocks, src=ROOT, group=g)
        if op == "barrier":
            return lambda: d.barrier(group=g)
        if op == "send_recv":
            peer = self.peer
            if peer is None:
                return lambda: None
            if self.me % 2 == 0:
                def pingpong():
                    d.send(self.x, peer, group=g)
                    d.recv(self.out, peer, group=g)
            else:
                def pingpong():
                    d.recv(self.out, peer, group=g)
                    d.send(self.out, peer, group=g)
            return pingpong
        raise ValueError(op)

    def validate(self, g) -> str | None:
        torch, p, me, n, op = self.torch, self.p, self.me, self.n, self.op
        full = lambda k, v: torch.full((k,), float(v))  # noqa: E731
        blocks = lambda f: torch.cat([full(n, f(q)) for q in range(p)])  # noqa: E731
        self.zero()
        want, got = None, None
        if op == "all_reduce":
            self.x.copy_(full(n, me + 1))
            want, got = full(n, p * (p + 1) // 2), self.x
        elif op == "broadcast":
            self.x.copy_(full(n, me + 1))
            want, got = full(n, ROOT + 1), self.x
        elif op == "reduce":
            self.x.copy_(full(n, me + 1))
            if me == ROOT:
                want, got = full(n, p * (p + 1) // 2), self.x
        elif op == "all_gather_into_tensor":
            self.x.copy_(full(n, me + 1))
            want, got = blocks(lambda q: q + 1), self.out
        elif op == "reduce_scatter_tensor":
            self.x.copy_(blocks(lambda q: me + 1 + q))
            want, got = full(n, p * (p + 1) // 2 + p * me), self.out
        elif op == "all_to_all_single":
            self.x.copy_(blocks(lambda q: me * p + q))
            want, got = blocks(lambda r: r * p + me), self.out
        elif op == "gather":
            self.x.copy_(full(n, me + 1))
            if me == ROOT:
                want, got = blocks(lambda q: q + 1), self.big
        elif op == "scatter":
            if me == ROOT:
                self.big.copy_(blocks(lambda q: q + 1))
            want, got = full(n, me + 1), self.out
        elif op == "send_recv":
            self.x.copy_(full(n, me + 1))
            if self.peer is not None:
                want, got = full(n, (me if me % 2 == 0 else self.peer) + 1), self.out
        self.call(g)()
        if want is not None and not torch.equal(got, want):
            bad = (got != want).nonzero()[0].item()
            return f"element {bad}: got {got[bad].item()}, want {want[bad].item()}"
        return None


if __name__ == "__main__":
    sys.exit(main())
