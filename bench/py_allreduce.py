#!/usr/bin/env python3
"""One rank of the Python allreduce comparison of `goal bench torch`: goal's Python package
(`import goal`) beside mpi4py under Open MPI, on numpy arrays.

    goalrun -n 2 --bind-to none python3 bench/py_allreduce.py --lib goal [--pin] [--sizes 8,65536]
    mpirun.openmpi -n 2 --bind-to none python3 bench/py_allreduce.py --lib mpi4py [--pin] [...]

What is timed, per dtype (float32: the comparison; float64: the same bytes as the C programs
bench/goal_coll.c and bench/mpi_coll.c reduce, for the Python layer's own cost) and size
(bytes of the vector), SUM from one array into another:

    goal-py             goal.allreduce(x, y)                 one-shot (its group's schedule cache)
    goal-py-persistent  s = goal.allreduce_init(x, y); s()   the schedule made once, run each time
    mpi4py              comm.Allreduce(x, y, op=MPI.SUM)     buffer-protocol (upper-case) call

Method as bench/goal_coll.c's (the thesis' 6.5): after a check with known data and a warm-up,
every rank times each call back to back (time.perf_counter_ns; allreduce synchronises the
ranks, so no separator), the times are gathered at rank 0, averaged over the ranks per
iteration, and the median over iterations is the value. Iterations: clamp(budget / estimate,
min, max), the estimate the slowest rank's. The arrays hold zeros while timed.

Rank 0 prints one JSON object per line: {"test": "meta", ...}, then {"test": "pyallreduce",
"lib", "dtype", "bytes", "median_us", "p25_us", "p75_us", "iters", "ranks"}.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]  # bench/torch.py


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", choices=("goal", "mpi4py"), required=True)
    ap.add_argument("--sizes", default="8,65536,1048576", help="bytes of the vector")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--budget-ms", type=float, default=300.0, help="time per point")
    ap.add_argument("--min-iters", type=int, default=20)
    ap.add_argument("--max-iters", type=int, default=20000)
    ap.add_argument("--pin", action="store_true", help="pin rank r to the (r mod n)-th allowed CPU")
    return ap.parse_args()


class Goal:
    """goal-py: the world group, its one-shot and persistent allreduce."""

    def __init__(self):
        import goal
        self.goal = goal
        goal.init()
        w = goal.world()
        self.rank, self.size = w.rank, w.size
        self.meta = {"lib": "goal-py", "module": goal.__file__}

    def variants(self, x, y):
        goal = self.goal
        s = goal.allreduce_init(x, y, op=goal.SUM)
        return {"goal-py": lambda: goal.allreduce(x, y, op=goal.SUM), "goal-py-persistent": s}

    def max(self, v: float) -> float:
        import numpy as np
        a = np.array([v])
        self.goal.allreduce(a, op=self.goal.MAX)
        return float(a[0])

    def gather(self, times):
        import numpy as np
        out = np.empty(len(times) * self.size) if self.rank == 0 else None
        self.goal.gather(np.asarray(times, dtype=np.float64), out, root=0)
        return out


class Mpi4py:
    """mpi4py: COMM_WORLD's Allreduce on buffers (Open MPI's MPI_Allreduce underneath)."""

    def __init__(self):
        from mpi4py import MPI
        self.MPI, self.comm = MPI, MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        lib = " ".join(MPI.Get_library_version().replace("\0", "").split())
        self.meta = {"lib": "mpi4py", "mpi4py": __import__("mpi4py").__version__, "mpi": lib}
        if "Open MPI" not in lib:
            raise SystemExit(f"py_allreduce.py: mpi4py runs on {lib!r}, not Open MPI (scripts/install-mpi4py.sh)")

    def variants(self, x, y):
        comm, SUM = self.comm, self.MPI.SUM
        return {"mpi4py": lambda: comm.Allreduce(x, y, op=SUM)}

    def max(self, v: float) -> float:
        return self.comm.allreduce(v, op=self.MPI.MAX)

    def gather(self, times):
        import numpy as np
        out = np.empty(len(times) * self.size) if self.rank == 0 else None
        self.comm.Gather(np.asarray(times, dtype=np.float64), out, root=0)
        return out


def main() -> int:
    a = parse_args()
    if a.pin:
        rank = int(os.environ.get("GOAL_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or 0)
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    import numpy as np

    lib = Goal() if a.lib == "goal" else Mpi4py()
    if lib.rank == 0:
        print(json.dumps({"test": "meta", **lib.meta, "ranks": lib.size, "numpy": np.__version__}), flush=True)
    for dtype in [d.strip() for d in a.dtypes.split(",") if d.strip()]:
        for nbytes in [int(s) for s in a.sizes.split(",") if s.strip()]:
            n = max(1, nbytes // np.dtype(dtype).itemsize)
            x, y = np.full(n, lib.rank + 1, dtype=dtype), np.zeros(n, dtype=dtype)
            for name, call in lib.variants(x, y).items():
                x[:] = lib.rank + 1
                y[:] = 0
                call()
                want = lib.size * (lib.size + 1) // 2
                if not (y == want).all():
                    raise SystemExit(f"py_allreduce.py: {name} {dtype} {nbytes} B: rank {lib.rank} got "
                                     f"{y[:4]} where every element should be {want}")
                x[:] = 0
                for _ in range(10):
                    call()
                est = []
                for _ in range(5):
                    t0 = time.perf_counter_ns()
                    call()
                    est.append((time.perf_counter_ns() - t0) / 1e3)
                est = lib.max(statistics.median(est))
                iters = max(a.min_iters, min(a.max_iters, int(a.budget_ms * 1e3 / max(est, 0.05))))
                times = [0.0] * iters
                for i in range(iters):
                    t0 = time.perf_counter_ns()
                    call()
                    times[i] = (time.perf_counter_ns() - t0) / 1e3
                every = lib.gather(times)
                if lib.rank == 0:
                    per_iter = sorted(every.reshape(lib.size, iters).mean(axis=0).tolist())
                    q = statistics.quantiles(per_iter, n=4)
                    print(json.dumps({"test": "pyallreduce", "lib": name, "dtype": dtype, "bytes": nbytes,
                                      "ranks": lib.size, "median_us": statistics.median(per_iter),
                                      "p25_us": q[0], "p75_us": q[2], "iters": iters}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
