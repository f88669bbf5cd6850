#!/usr/bin/env python3
"""goal as a torch.distributed backend beside Gloo, and goal's Python package beside mpi4py.

    python3 bench/torch.py --prefix DIR [--out results/torch] [--quick] [--setups local2,local4,cluster2,cluster2-1g]

What issue 44's "Done when" measures, in one run (bench/README.md, "torch"):

1. colls: every backend collective (all_reduce, broadcast, all_gather_into_tensor,
   reduce_scatter_tensor, all_to_all_single, gather, scatter, reduce, barrier, send/recv),
   float32, 8 B .. 32 MiB per rank's block, backend "goal" (goal_torch) beside "gloo", at 2
   and 4 ranks on this machine (local2, local4) and at 2 ranks on 2 emulated hosts, one each
   (cluster2: goal-cluster's network namespaces, root only; skipped, saying so, otherwise).
   Both backends live in each rank's process (the default group "goal" and
   dist.new_group(backend="gloo") over the same ranks) and alternate, first one then the other,
   round by round at every point, so that noise hits both alike; medians, goal/gloo per point.
2. overlap: all_reduce(async_op=True) of 64 KiB and 1 MiB by the IMB-NBC method (t_pure,
   t_cpu, t_ovrl, overlap %; the computation matrix products calibrated to t_pure, no calls
   during it), goal beside gloo, in each setup, and in cluster2-1g: the 2 emulated hosts'
   link limited to 1 Gbit/s, where a transfer leaves the CPUs idle (this part only).
3. ddp: DistributedDataParallel time per step, goal beside gloo, a small MLP on synthetic data,
   the median over steps after warm-up, in each setup (the losses must agree step by step).
4. python: goal's Python package (`goal.allreduce` on numpy float32, one-shot and persistent)
   beside mpi4py's `comm.Allreduce` under Open MPI, 2 ranks, 8 B, 64 KiB and 1 MiB; and the
   Python layer's own cost per call: the same allreduce (float64, the same bytes) from C,
   bench/goal_coll.c under goalrun and bench/mpi_coll.c under Open MPI's mpirun, subtracted.

bench/torch_rank.py (one rank of parts 1-3) and bench/py_allreduce.py (one rank of part 4)
state the timing method in their heads. Ranks are pinned, rank r to the (r mod n)-th allowed
CPU (--no-pin: not), torch to one thread. Needs torch and goal_torch (`make torch
PREFIX=DIR`), for part 4 goal's package (`make python PREFIX=DIR`) and mpi4py on Open MPI
(scripts/install-mpi4py.sh); what is missing is skipped with a note. Writes OUT.json (every
row, the jobs, the summary tables, notes), OUT.md (the method and the tables), OUT.png (the
overview: goal's speedup over Gloo per setup, overlap, DDP, Python) and OUT_colls.png (time
against size, every collective and setup). --quick: sizes 8 B and 64 KiB, one round, short
budgets (about a minute, plus the emulated hosts as root).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import torch_report as R  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
OPS = ["all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
       "gather", "scatter", "reduce", "barrier", "send_recv"]
SETUPS = {  # name: (ranks, emulated hosts or 0 for this machine, description)
    "local2": (2, 0, "2 ranks on this machine"),
    "local4": (4, 0, "4 ranks on this machine"),
    "cluster2": (2, 2, "2 ranks on 2 emulated hosts, 1 each"),
    "cluster2-1g": (2, 2, "2 ranks on 2 emulated hosts, 1 each, at 1 Gbit/s (overlap only)"),
}
# Setups that measure only some parts, and their rail rate (else --rate): at 1 Gbit/s a
# transfer leaves the CPUs idle for most of its time, which an overlap can use; on this
# machine's shared memory and unlimited veth the collective is CPU work that competes with
# the computation for the same two CPUs (docs/measurements/torch-async-2026-11-29).
SETUP_PARTS = {"cluster2-1g": ("overlap",)}
SETUP_RATE = {"cluster2-1g": "1gbit"}
DEFAULT_SETUPS = "local2,local4,cluster2,cluster2-1g"
QUICK_SETUPS = "local2,local4,cluster2"
SIZES = [8, KiB, 64 * KiB, MiB, 32 * MiB]
QUICK_SIZES = [8, 64 * KiB]
PY_SIZES = [8, 64 * KiB, MiB]
CLUSTER_ADDR = "10.100.0.1"  # host 0 on rail 0 (crates/goal-netns/src/plan.rs)


def sizes_arg(text: str | None, default: list[int]) -> list[int]:
    return [C.parse_size(x) for x in text.split(",") if x.strip()] if text else list(default)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", type=Path, required=True, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "torch"), help="output path without extension "
                    "(default results/torch)")
    ap.add_argument("--quick", action="store_true", help="smoke run: sizes 8 B and 64 KiB, one round, short "
                    "budgets, overlap at 64 KiB only, few DDP steps")
    ap.add_argument("--setups", help="comma list among "
                    f"{', '.join(SETUPS)} (default all, quick {QUICK_SETUPS}; the emulated hosts need root; "
                    "cluster2-1g measures the overlap only)")
    ap.add_argument("--parts", default="colls,overlap,ddp,python", help="what to measure (default all)")
    ap.add_argument("--ops", default=",".join(OPS), help="collectives (default all)")
    ap.add_argument("--sizes", help="bytes per rank's block, K/M suffixes (default 8,1K,64K,1M,32M; quick 8,64K)")
    ap.add_argument("--rounds", type=int, help="rounds per point, the backends alternating (default 3, quick 1)")
    ap.add_argument("--budget-ms", type=float, help="time per point, backend and round (default 100, quick 5)")
    ap.add_argument("--min-iters", type=int, help="iterations per point, backend and round, at least "
                    "(default 5, quick 3)")
    ap.add_argument("--max-iters", type=int, help="... and at most (default 300, quick 30)")
    ap.add_argument("--overlap-sizes", help="all_reduce sizes of the overlap test (default 64K,1M; quick 64K)")
    ap.add_argument("--overlap-iters", type=int, help="iterations per phase, backend and round (default 30, quick 5)")
    ap.add_argument("--matrix", type=int, default=32, help="M of the overlap's MxM products (default 32)")
    ap.add_argument("--ddp-steps", type=int, help="timed DDP steps per backend and round (default 10, quick 3)")
    ap.add_argument("--ddp-warmup", type=int, help="untimed DDP steps per backend first (default 5, quick 2)")
    ap.add_argument("--py-sizes", help="sizes of the Python allreduce (default 8,64K,1M; quick 8,64K)")
    ap.add_argument("--py-budget-ms", type=float, help="time per Python point and run (default 300, quick 20)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the ranks")
    ap.add_argument("--rate", default="none", help="the emulated hosts' rail rate, as tc writes it (default "
                    "none: no limit; e.g. 10gbit)")
    ap.add_argument("--cluster-tool", type=Path, help="the goal-cluster binary (default: "
                    "$CARGO_TARGET_DIR/release or target/release of the source tree, built if missing)")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the ranks (default this one)")
    ap.add_argument("--timeout", type=float, help="seconds per job (default 1200, quick 300)")
    ap.add_argument("--wait-idle", type=float, help="wait up to this many seconds for an idle machine before "
                    "each job (default 10, quick 0)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    a = ap.parse_args()
    q = a.quick
    dflt = lambda v, full, quick: (quick if q else full) if v is None else v  # noqa: E731
    a.rounds = dflt(a.rounds, 3, 1)
    a.budget_ms = dflt(a.budget_ms, 100.0, 5.0)
    a.min_iters = dflt(a.min_iters, 5, 3)
    a.max_iters = dflt(a.max_iters, 300, 30)
    a.overlap_iters = dflt(a.overlap_iters, 30, 5)
    a.ddp_steps = dflt(a.ddp_steps, 10, 3)
    a.ddp_warmup = dflt(a.ddp_warmup, 5, 2)
    a.py_budget_ms = dflt(a.py_budget_ms, 300.0, 20.0)
    a.timeout = dflt(a.timeout, 1200.0, 300.0)
    a.wait_idle = dflt(a.wait_idle, 10.0, 0.0)
    a.sizes = sizes_arg(a.sizes, QUICK_SIZES if q else SIZES)
    a.overlap_sizes = sizes_arg(a.overlap_sizes, [64 * KiB] if q else [64 * KiB, MiB])
    a.py_sizes = sizes_arg(a.py_sizes, QUICK_SIZES if q else PY_SIZES)
    a.setups = [s.strip() for s in (a.setups or (QUICK_SETUPS if q else DEFAULT_SETUPS)).split(",") if s.strip()]
    a.parts = [s.strip() for s in a.parts.split(",") if s.strip()]
    a.ops = [s.strip() for s in a.ops.split(",") if s.strip()]
    for what, got, known in (("--setups", a.setups, SETUPS), ("--ops", a.ops, OPS),
                             ("--parts", a.parts, ("colls", "overlap", "ddp", "python"))):
        bad = [x for x in got if x not in known]
        if bad:
            ap.error(f"{what}: unknown {', '.join(bad)} (known: {', '.join(known)})")
    if any(s % 4 for s in a.sizes + a.overlap_sizes):
        ap.error("sizes must be multiples of 4 bytes (float32)")
    return a


# ---------------------------------------------------------------------------------------
# running jobs

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cmds: list[tuple[list[str], dict]], timeout: float) -> list[C.Result]:
    """Starts one process per (command, environment), all in one new process group, their
    output in files; waits for all, killing the group (and only it) at the timeout or as soon
    as one fails (the others would wait for it in a collective). One Result per process."""
    tmp = tempfile.mkdtemp(prefix="goal-bench-torch.")
    procs, files, pgid = [], [], 0
    t0 = time.monotonic()
    try:
        for i, (cmd, env) in enumerate(cmds):
            out, err = open(f"{tmp}/{i}.out", "w+"), open(f"{tmp}/{i}.err", "w+")
            files.append((out, err))
            if C.VERBOSE:
                C.log("+ " + " ".join(f"{k}={v}" for k, v in env.items() if k not in os.environ) + " " + " ".join(cmd))
            p = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env={**os.environ, **{k: str(v) for k, v in env.items()}}, process_group=pgid)
            pgid = pgid or p.pid
            procs.append(p)
        timed_out = failed = False
        while any(p.poll() is None for p in procs):
            if time.monotonic() - t0 > timeout:
                timed_out = True
            failed = any(p.returncode not in (None, 0) for p in procs)
            if timed_out or failed:
                time.sleep(0 if timed_out else 5)  # a failing job: give the others time to say why
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(pgid, sig)
                    except ProcessLookupError:
                        break
                    time.sleep(2)
                break
            time.sleep(0.05)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        res = []
        for p, (out, err), (cmd, _) in zip(procs, files, cmds):
            out.seek(0)
            err.seek(0)
            rc = p.returncode if p.returncode is not None else -9
            res.append(C.Result([str(c) for c in cmd], rc, out.read(), err.read(), time.monotonic() - t0, timed_out))
        return res
    finally:
        for out, err in files:
            out.close()
            err.close()
        shutil.rmtree(tmp, ignore_errors=True)


def job(a, name: str, cmds, runs: list, notes: list) -> list[dict]:
    """One job (its ranks' commands), metered; the rows rank 0 printed. A failure becomes a
    note and a failed run record; the benchmark goes on with the next job."""
    if a.wait_idle > 0:
        idle, waited = C.wait_for_idle(a.wait_idle)
        if not idle:
            C.log(f"  machine still busy after {waited:.0f} s: {', '.join(C.busy_processes(10)) or '?'}")
    C.log(f"{name} ...")
    with C.CpuMeter() as meter:
        res = launch(cmds, a.timeout)
    ok = all(r.ok for r in res)
    run = {"job": name, "ok": ok, "seconds": round(max(r.seconds for r in res), 1), "rc": [r.rc for r in res],
           "cmd": [" ".join(r.cmd) for r in res[:1]], **meter.result,
           "disturbed": meter.result["foreign_pct"] > C.DISTURBED_PCT}
    if not ok:
        bad = next((r for r in res if not r.ok and (r.stderr.strip() or r.stdout.strip())), res[0])
        run["stderr_tail"] = bad.stderr.strip().splitlines()[-30:]
        why = "timed out" if bad.timed_out else f"exit code {bad.rc}"
        notes.append(f"FAILED {name}: {why}: " + " | ".join(bad.stderr.strip().splitlines()[-3:]))
        C.warn(f"{name} failed:\n    " + "\n    ".join(run["stderr_tail"] or ["(no output)"]))
    runs.append(run)
    rows = C.parse_rows(res[0].stdout)
    for r in rows:
        r["job"] = name
    return rows


def setup_parts(a, setup: str) -> list[str]:
    """The torch parts `setup` measures: those asked for, less what the setup leaves out."""
    return [p for p in a.parts if p in ("colls", "overlap", "ddp") and p in SETUP_PARTS.get(setup, (p,))]


def torch_rank_args(a, setup: str) -> list[str]:
    parts = setup_parts(a, setup)
    args = ["--setup", setup, "--parts", ",".join(parts), "--ops", ",".join(a.ops),
            "--sizes", ",".join(map(str, a.sizes)), "--rounds", str(a.rounds), "--budget-ms", str(a.budget_ms),
            "--min-iters", str(a.min_iters), "--max-iters", str(a.max_iters),
            "--overlap-sizes", ",".join(map(str, a.overlap_sizes)), "--overlap-iters", str(a.overlap_iters),
            "--matrix", str(a.matrix), "--ddp-steps", str(a.ddp_steps), "--ddp-warmup", str(a.ddp_warmup)]
    return args + ([] if a.no_pin else ["--pin"])


def torch_job(a, setup: str, cluster: str | None, tool: Path | None, runs, notes) -> list[dict]:
    """One torch job of `setup`: its ranks started directly, as torchrun's children would be."""
    ranks, hosts, _ = SETUPS[setup]
    port = 29500 + os.getpid() % 1000 if hosts else free_port()
    with C.SeparatorFile() as sep:
        cmds = []
        for r in range(ranks):
            env = {"RANK": r, "WORLD_SIZE": ranks, "LOCAL_RANK": r, "LOCAL_WORLD_SIZE": ranks,
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "OMP_NUM_THREADS": 1}
            prog = [a.python, C.BENCH / "torch_rank.py", "--sep-file", sep.path, *torch_rank_args(a, setup)]
            if hosts:
                host = r * hosts // ranks
                env.update(MASTER_ADDR=CLUSTER_ADDR, LOCAL_RANK=0, LOCAL_WORLD_SIZE=ranks // hosts,
                           GOAL_RAILS="rail0", GLOO_SOCKET_IFNAME="rail0")
                prog = [tool, "exec", "--name", cluster, "--host", host, "--", *prog]
            cmds.append((prog, env))
        return job(a, f"torch {setup}", cmds, runs, notes)




def py_check(a, code: str) -> C.Result:
    """`python -c code` outside bench/ (where torch.py would shadow torch)."""
    return C.run([a.python, "-c", code], timeout=300, cwd="/")


# ---------------------------------------------------------------------------------------
# part 4: the Python package beside mpi4py, and the same allreduce in C

def python_part(a, goal: C.Goal, runs, notes, libs) -> list[dict]:
    sizes = ",".join(map(str, a.py_sizes))
    pin = [] if a.no_pin else ["--pin"]
    prog = [a.python, C.BENCH / "py_allreduce.py", "--sizes", sizes, "--budget-ms", str(a.py_budget_ms), *pin]
    if a.quick:
        prog += ["--min-iters", "10"]
    configs = []  # (name, commands)
    if py_check(a, "import goal").ok:
        configs.append(("goal-py", [[goal.goalrun, "-n", 2, "--bind-to", "none", *prog, "--lib", "goal"]]))
    else:
        notes.append("python: goal's Python package is not installed for this Python (make python PREFIX=DIR): "
                     "no goal-py rows")
    mpis = C.find_mpis()
    ompi = mpis.get("openmpi")
    have_mpi4py = py_check(a, "import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; "
                              "assert 'Open MPI' in MPI.Get_library_version()").ok
    if ompi and have_mpi4py:
        configs.append(("mpi4py", [ompi.launch(2, [*prog, "--lib", "mpi4py"])[0]]))
    else:
        notes.append("python: mpi4py on Open MPI is missing (scripts/install-mpi4py.sh installs it): no mpi4py rows")
    budget = str(max(5.0, a.py_budget_ms / 2))
    common = ["--colls", "allreduce", "--sizes", sizes, "--budget-ms", budget, *pin]
    try:
        exe = C.build_goal_program(goal, C.BENCH / "goal_coll.c", C.BUILD / "goal_coll",
                                   [C.BENCH / "coll_common.h", C.BENCH / "separator.h"])
        configs.append(("goal-c", [[goal.goalrun, "-n", 2, "--bind-to", "none", exe, "--name", "goal-c",
                                    "--algs", "auto", *common]]))
    except C.BenchError as e:
        notes.append(f"python: bench/goal_coll.c did not build, no C reference for goal: {e}")
    if ompi:
        try:
            exe = C.build_mpi_program(ompi, C.BENCH / "mpi_coll.c", C.BUILD / "mpi_coll.openmpi",
                                      [C.BENCH / "coll_common.h", C.BENCH / "separator.h",
                                       C.BENCH / "mpi_persistent.h"])
            configs.append(("openmpi-c", [ompi.launch(2, [exe, "openmpi-c", "--variants", "blocking", *common])[0]]))
            libs["openmpi"] = {"version": C.capture([ompi.mpirun, "--version"]).splitlines()[0]
                               if C.capture([ompi.mpirun, "--version"]) else ""}
        except C.BenchError as e:
            notes.append(f"python: bench/mpi_coll.c did not build with Open MPI, no C reference for mpi4py: {e}")
    rows = []
    for rnd in range(a.rounds):
        k = rnd % max(1, len(configs))
        for name, cmds in configs[k:] + configs[:k]:  # a rotating order, round by round
            # The Python rows' dtypes in turns, float32 first in even rounds, float64 in odd
            # ones: the first run's float32 1 MiB (590 us against 109 in float64, the same
            # algorithm and kernels) came first in every round, and 2 ranks alone gave 110 us
            # in both (and ~550 us in both on a loaded machine).
            if name in ("goal-py", "mpi4py"):
                order = "float32,float64" if rnd % 2 == 0 else "float64,float32"
                cmds = [c + ["--dtypes", order] for c in cmds]
            got = job(a, f"python {name} round {rnd + 1}", [(c, {"OMP_NUM_THREADS": 1}) for c in cmds], runs, notes)
            for r in got:
                r["round"] = rnd
                if r.get("test") == "coll":  # goal_coll.c / mpi_coll.c: float64 of as many bytes
                    r.update(test="pyallreduce", lib=name, dtype="float64")
            rows += got
    return rows


# ---------------------------------------------------------------------------------------

def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    out = Path(a.out)
    out = (out if out.is_absolute() else Path.cwd() / out).with_suffix("") if out.suffix in (".json", ".png") \
        else (out if out.is_absolute() else Path.cwd() / out)
    t_start = time.time()
    try:
        goal = C.find_goal(a.prefix)
    except C.BenchError as e:
        C.die(str(e))
    machine = C.machine_info()
    notes: list[str] = []
    runs: list[dict] = []
    rows: list[dict] = []
    libs: dict = {"goal": {"version": goal.version, "prefix": str(goal.prefix)}}

    torch_parts = [p for p in a.parts if p in ("colls", "overlap", "ddp")]
    if torch_parts:
        r = py_check(a, "import torch; print(torch.__version__)")
        if not r.ok:
            C.die("torch is not installed for " + a.python + " (scripts/install-torch.sh): " + r.describe(3))
        libs["torch"] = {"version": r.stdout.strip(), "note": "gloo: torch's own backend"}
        r = py_check(a, "import goal_torch; print(goal_torch.__file__)")
        if not r.ok:
            C.die(f"goal_torch does not import (make torch PREFIX={a.prefix}): " + r.describe(3))
    setups = [s for s in a.setups if setup_parts(a, s)] if torch_parts else []
    a.setup_parts = {s: setup_parts(a, s) for s in setups}
    cluster, tool = None, None
    emulated = [s for s in setups if SETUPS[s][1]]
    if emulated:
        why = None
        if os.geteuid() != 0:
            why = "the emulated hosts need root (network namespaces)"
        elif (tool := C.find_cluster_tool(a.cluster_tool)) is None:
            why = "goal-cluster is not built (cargo build --release -p goal-netns in the source tree)"
        if why:
            for s in emulated:
                notes.append(f"{s} skipped: {why}")
                C.log(f"{s} skipped: {why}")
                setups.remove(s)
    try:
        for setup in setups:
            if SETUPS[setup][1]:
                cluster = f"tb{os.getpid() % 100000}"
                C.run([tool, "down", "--name", cluster], timeout=60)
                C.run([tool, "up", "--name", cluster, "--hosts", str(SETUPS[setup][1]), "--rails", "1",
                       "--rate", SETUP_RATE.get(setup, a.rate)], timeout=120, check=True)
            try:
                rows += torch_job(a, setup, cluster, tool, runs, notes)
            finally:
                if cluster:
                    C.run([tool, "down", "--name", cluster], timeout=60)
                    cluster = None
        if "python" in a.parts:
            rows += python_part(a, goal, runs, notes, libs)
    except C.BenchError as e:
        C.die(str(e))
    for m in (r for r in rows if r.get("test") == "meta"):
        if m.get("libgoal"):
            libs.setdefault("goal_torch", {"version": m.get("goal_torch"), "libgoal": m["libgoal"]})
            if not str(m["libgoal"]).startswith(str(goal.prefix)):
                notes.append(f"goal_torch loaded {m['libgoal']}, not the libgoal.so of {goal.prefix}: "
                             f"`make torch PREFIX={a.prefix}` builds it against this prefix")
        if m.get("lib") == "mpi4py":
            libs["mpi4py"] = {"version": m.get("mpi4py"), "note": m.get("mpi")}
        if m.get("lib") == "goal-py":
            libs["goal-py"] = {"version": m.get("module")}
    notes = list(dict.fromkeys(notes))
    dist = [f"{r['job']} ({r['foreign_pct']}%)" for r in runs if r.get("disturbed")]
    if dist:
        notes.append(f"other processes used more than {C.DISTURBED_PCT:.0f}% of the CPUs during: {', '.join(dist)}")
    summary = R.summarize(rows, a, setups)
    notes += summary.pop("notes")
    elapsed = time.time() - t_start
    doc = {"benchmark": "torch", "machine": machine,
           "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
           "method": "bench/torch_rank.py and bench/py_allreduce.py heads; OUT.md",
           "setups": {s: SETUPS[s][2] for s in setups}, "libraries": libs, "notes": notes,
           "elapsed_s": round(elapsed, 1), "runs": runs, "rows": rows, "summary": summary}
    C.write_json(out.with_suffix(".json"), doc)
    text = R.report(doc)
    out.with_suffix(".md").write_text(text)
    print(text)
    R.plot(doc, out)
    C.log(f"wrote {out.with_suffix('.json')}, {out.with_suffix('.md')}, {out}.png, {out}_colls.png "
          f"in {elapsed / 60:.1f} min")
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
