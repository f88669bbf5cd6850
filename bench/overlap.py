#!/usr/bin/env python3
"""Overlap of non-blocking collectives with computation: goal's progress modes against Open MPI and MPICH.

    python3 bench/overlap.py --prefix DIR              # 2 local ranks -> results/overlap.json, results/overlap*.png
    python3 bench/overlap.py --prefix DIR --quick      # one round, shorter tests (smoke test)
    python3 bench/overlap.py --prefix DIR --cluster    # (root) emulated hosts -> results/overlap_cluster.json, *.png

bench/overlap.c (its header has every formula) is built against goal (-DUSE_GOAL, pkg-config)
and with each MPI's mpicc, and runs five tests on 2 ranks:
  overlap       IMB-NBC: overlap % = 100 max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu)))
                with a computation calibrated to max(t_pure, 50 us), no progress calls ("none") or a
                progress call every ~4 us of work ("progress": GOAL_Progress / MPI_Test);
  cpu           KACC: CPU usage % = 100 (1 - W_comm / W_idle), the work rate with the collective
                running back to back (start; compute one quantum; wait) against the work rate
                alone, and Hoefler/Lumsdaine's work-based ratio T_comm / T_idle;
  idle          idle cost % = 100 (1 - R / R_before): work rate after init (and after collectives
                have run and finished) against the rate before the library was initialised;
  hostoverhead  ESPGOAL thesis 6.6: start; blocked N x N matrix multiply; wait -> start overhead,
                time in the multiply (loss % against the multiply alone) and time in the wait;
  background    start; a fixed computation (20 ms, quick 10 ms) without library calls; one test
                call (GOAL_Test / MPI_Test); wait -> done % = how often the op had finished during
                the computation (min over ranks), lost % = 100 (1 - T_idle / T_bg), how much longer
                the same computation took with the op in the background.
on barrier, bcast 8 B / 64 KiB / 1 MiB, allreduce 8 B / 64 KiB / 1 MiB (float32 sum) and, for goal
only, pingpong200 (one schedule of 200 dependent 8-byte ping-pongs; n/a for MPI).

Libraries and modes:
    goal-MODE      DIR/bin/goalrun -n 2 overlap.goal --pin, GOAL_PROGRESS=MODE for manual, thread,
                   spin, auto, kernel (what each does in this version: docs/api.md, quoted in the output)
    openmpi        mpirun.openmpi -n 2 --bind-to none overlap.openmpi --pin (no progress thread)
    mpich          mpirun.mpich -n 2 -bind-to none overlap.mpich --pin
    mpich-async    the same with MPIR_CVAR_ASYNC_PROGRESS=1 (MPI_THREAD_MULTIPLE; a progress thread)
    oneccl         Intel oneCCL (bench/ccl.py), started by MPICH, where scripts/install-oneccl.sh
                   installed it; its worker thread per rank progresses, spinning (local setups only)
Setups: "local" = 2 ranks on this machine's 2 CPUs (fully subscribed: every core computes, and the
progress threads run on their rank's core, --pin, unless the library pinned them to one CPU itself:
goal's helpers share the highest CPU then). With --cluster (root): an emulated cluster of 4
hosts with one 1 Gbit/s rail (goal-cluster, crates/goal-netns), "4x1" = 4 hosts x 1 rank (4
computing ranks on 2 cores: oversubscribed) and "2x1" = 2 hosts x 1 rank; goal and Open MPI (btl
tcp,self) under goal-cluster's Open MPI mpirun, MPICH under its hydra (--mpich; UCX over TCP).

Noise: each round runs every configuration once, in rotating order; before each run the harness
waits for an idle machine, probes the core-to-core latency (bench/c2c.c) before and after, and
repeats a run during which other processes took >10% of the CPUs. The tables show medians over
rounds of the clean runs in one vCPU state (see state_choice); locally, a library without such a
run gets up to --catch-up more runs at the end. A failed or timed-out run is reported with its
stderr tail.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ccl  # noqa: E402
import common as C  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
MODES = ["manual", "thread", "spin", "auto", "kernel"]
# (op, bytes) in the program's order
OPS = [("barrier", 0), ("bcast", 8), ("bcast", 64 * KiB), ("bcast", MiB), ("allreduce", 8),
       ("allreduce", 64 * KiB), ("allreduce", MiB), ("pingpong200", 8)]
VARIANTS = ("none", "progress")
TESTS = ("overlap", "cpu", "idle", "hostoverhead", "background")
UNRESOLVED = 0.05       # overlap % is shown in parentheses when t_pure < 5% of t_cpu (timer noise)
RATE = "1gbit"
FINALIZE_GRACE = 20.0   # seconds a run may take to exit after its last row ({"test": "done"})
SETUPS = {  # name: (ranks, hosts or None for local, title)
    "local": (2, None, "local: 2 ranks on this machine"),
    "4x1": (4, 4, "cluster 4x1: 4 emulated hosts x 1 rank, 1 Gbit/s"),
    "2x1": (2, 2, "cluster 2x1: 2 emulated hosts x 1 rank, 1 Gbit/s"),
}


@dataclass
class Config:
    setup: str
    lib: str
    cmd: list[str]
    env: dict = field(default_factory=dict)
    note: str = ""


# ---------------------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--prefix", type=Path, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--out", help="output path without extension (default results/overlap, with "
                    "--cluster results/overlap_cluster)")
    ap.add_argument("--build-dir", type=Path, default=Path("/tmp/goal-bench-overlap"),
                    help="where the programs are built (default /tmp/goal-bench-overlap)")
    ap.add_argument("--quick", action="store_true", help="one round, shorter tests")
    ap.add_argument("--rounds", type=int, help="runs of each configuration, interleaved (default 3, quick 1; "
                    "cluster 2)")
    ap.add_argument("--cluster", action="store_true",
                    help="run the emulated-cluster setups (4x1, 2x1; needs root) instead of the local one")
    ap.add_argument("--setups", help="comma list among local, 4x1, 2x1 (overrides --cluster's choice)")
    ap.add_argument("--cluster-tool", type=Path,
                    help="the goal-cluster binary (default $CARGO_TARGET_DIR or target/, release/goal-cluster, "
                    "built if missing)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="GOAL_PROGRESS modes (default all five); thread-rt: thread with GOAL_PROGRESS_RT=1; "
                         "MODE+GOAL_VAR=VALUE adds a variable (thread+GOAL_SLICE_US=0)")
    ap.add_argument("--libs", default="", help="comma list: run only these library names "
                    "(goal-manual, ..., openmpi, mpich, mpich-async)")
    ap.add_argument("--no-goal", action="store_true", help="the MPIs only")
    ap.add_argument("--tests", default="", help=f"comma list of tests for the program among {', '.join(TESTS)} "
                    "(default all)")
    ap.add_argument("--ops", default="", help="comma list of ops for the program, e.g. barrier,bcast:1M")
    ap.add_argument("--mm-sizes", default="", help="matrix sizes for hostoverhead (default: the program's, "
                    "64,128,256,512 (quick 64,256,512); cluster 64,256,512)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin ranks")
    ap.add_argument("--timeout", type=float, help="seconds per run (default 240, local quick 120)")
    ap.add_argument("--max-s", type=float, help="the program skips points it has not begun after this "
                    "many seconds (default 90, quick 40; cluster 50, quick 30)")
    ap.add_argument("--wait-idle", type=float, help="wait up to this many seconds for an idle machine "
                    "before each run (default 15, quick 5)")
    ap.add_argument("--retries", type=int, help="repeat a disturbed run up to N times (default 2, quick 1)")
    ap.add_argument("--catch-up", type=int, help="extra runs (at most, per library) for libraries without a "
                    "clean run in the vCPU state the summary uses (default 2; quick and cluster 0)")
    ap.add_argument("--all-states", action="store_true", help="summarize every run, not only the clean ones")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    a = ap.parse_args()
    if not a.no_goal and a.prefix is None:
        ap.error("--prefix DIR is required (or --no-goal)")
    a.setups = ([s.strip() for s in a.setups.split(",") if s.strip()] if a.setups
                else ["4x1", "2x1"] if a.cluster else ["local"])
    for s in a.setups:
        if s not in SETUPS:
            ap.error(f"unknown setup {s!r} (local, 4x1, 2x1)")
    for t in a.tests.split(","):
        if t.strip() and t.strip() not in TESTS:
            ap.error(f"unknown test {t.strip()!r} ({', '.join(TESTS)})")
    cluster = any(SETUPS[s][1] for s in a.setups)
    if a.out is None:
        a.out = str(C.REPO / "results" / ("overlap_cluster" if cluster else "overlap"))
    if a.rounds is None:
        a.rounds = 1 if a.quick else 2 if cluster else 3
    if a.timeout is None:
        a.timeout = 240 if cluster else 120 if a.quick else 240
    if a.max_s is None:
        a.max_s = (30 if a.quick else 50) if cluster else 40 if a.quick else 90
    if a.wait_idle is None:
        a.wait_idle = 5 if a.quick else 15
    if a.retries is None:
        a.retries = 1 if a.quick else 2
    if a.catch_up is None:
        a.catch_up = 0 if a.quick or cluster else 2
    return a


def program_args(a, setup: str, lib: str) -> list[str]:
    args = ["--name", lib, "--max-s", str(a.max_s)]
    if not a.no_pin:
        args.append("--pin")
    if a.quick:
        args.append("--quick")
    if a.tests:
        args += ["--tests", a.tests]
    if a.ops:
        args += ["--ops", a.ops]
    mm = a.mm_sizes or ("" if SETUPS[setup][1] is None else "64,256,512")
    if mm:
        args += ["--mm-sizes", mm]
    return args


# ---------------------------------------------------------------------------------------
# building

def build(a) -> tuple[dict, dict]:
    """{name: executable} for goal and each MPI found, and library info."""
    bdir = a.build_dir
    bdir.mkdir(parents=True, exist_ok=True)
    src = C.BENCH / "overlap.c"
    flags = [*C.CFLAGS, "-I", str(C.BENCH)]
    exes, info = {}, {}
    if not a.no_goal:
        try:
            goal = C.find_goal(a.prefix)
        except C.BenchError as e:
            C.die(f"goal: {e}")
        exe = bdir / "overlap.goal"
        libdir = goal.prefix / "lib"
        r = C.run(["cc", *flags, "-DUSE_GOAL", *goal.cflags, "-o", exe, src, *goal.libs,
                   f"-Wl,-rpath,{libdir}", "-lm"], timeout=300)
        if not r.ok:
            C.die(f"building overlap.c against goal failed: {r.describe(40)}")
        exes["goal"] = exe
        info["goal"] = {"prefix": str(goal.prefix), "version": f"goal {goal.version}"}
    for name, mpi in C.find_mpis().items():
        exe = bdir / f"overlap.{name}"
        r = C.run([mpi.mpicc, *flags, "-o", exe, src, "-lm"], timeout=300)
        if not r.ok:
            C.warn(f"{name}: building overlap.c failed, skipping it:\n{r.describe(40)}")
            continue
        exes[name] = exe
        info[name] = {"mpicc": mpi.mpicc, "mpirun": mpi.mpirun}
    for name in ("openmpi", "mpich"):
        if name not in exes:
            C.warn(f"{name} is not available (scripts/install-deps.sh installs it); continuing without it")
    prefix = ccl.find()
    if prefix is None:
        C.warn(ccl.missing())
    elif "mpich" not in exes:
        C.warn("oneCCL is run under MPICH, which is missing; continuing without oneCCL")
    else:
        mpich = C.find_mpis()["mpich"]
        try:
            exes[ccl.NAME] = ccl.build(mpich, prefix, [C.BENCH / "p2p_common.h"], src, bdir / "overlap.oneccl", ["-lm"])
            info[ccl.NAME] = {"prefix": str(prefix), "mpirun": mpich.mpirun}
        except C.BenchError as e:
            C.warn(f"oneCCL: building overlap.c failed, skipping it:\n{e}")
    return exes, info


def mode_env(mode: str) -> dict:
    """The environment of goal's library name goal-MODE: GOAL_PROGRESS=MODE, and for
    "thread-rt" (not in the default list) the thread mode with a real-time helper. A mode
    may add variables after "+": "thread+GOAL_SLICE_US=0" compares a setting in one run."""
    mode, *extra = mode.split("+")
    env = {"GOAL_PROGRESS": "thread", "GOAL_PROGRESS_RT": "1"} if mode == "thread-rt" else {"GOAL_PROGRESS": mode}
    for kv in extra:
        k, sep, v = kv.partition("=")
        if not sep or not k.startswith("GOAL_"):
            C.die(f"--modes: {mode}+{kv}: expected MODE+GOAL_VARIABLE=VALUE")
        env[k] = v
    return env


def configs_for(a, setup: str, exes: dict, cname: str | None, tool: Path | None) -> list[Config]:
    ranks, hosts, _ = SETUPS[setup]
    out: list[Config] = []
    mpis = C.find_mpis()
    libs = []
    if "goal" in exes:
        libs += [(f"goal-{m}", "goal", mode_env(m)) for m in a.modes.split(",") if m.strip()]
    if "openmpi" in exes:
        libs.append(("openmpi", "openmpi", {}))
    if "mpich" in exes:
        libs += [("mpich", "mpich", {"MPIR_CVAR_ASYNC_PROGRESS": "0"}),
                 ("mpich-async", "mpich", {"MPIR_CVAR_ASYNC_PROGRESS": "1"})]
    if ccl.NAME in exes and hosts is None:  # on one machine only, started by MPICH
        libs.append((ccl.NAME, ccl.NAME, {}))
    for lib, base, env in libs:
        exe = str(exes["goal" if base == "goal" else base])
        prog = [exe, *program_args(a, setup, lib)]
        note = " ".join(f"{k}={v}" for k, v in env.items())
        if hosts is None:
            if base == "goal":
                cmd = [str(a.prefix.resolve() / "bin" / "goalrun"), "-n", str(ranks), *prog]
                out.append(Config(setup, lib, cmd, env, note))
            else:
                cmd, _ = mpis["mpich" if base == ccl.NAME else base].launch(ranks, prog, bind="none")
                out.append(Config(setup, lib, cmd, env, note))
            continue
        head = [str(tool), "mpirun", "--name", cname, "--np", str(ranks), "--per-host", "1", "--rails", "0"]
        if base == "goal":
            xs = [x for k, v in env.items() for x in ("-x", f"{k}={v}")]
            cmd = head + ["--", *xs, "-x", "GOAL_RAILS=rail0", *prog]
            note += " GOAL_RAILS=rail0, under goal-cluster's Open MPI mpirun"
        elif base == "openmpi":
            cmd = head + ["--", "--mca", "btl", "tcp,self", *prog]
            note = "--mca btl tcp,self"
        else:
            gs = [x for k, v in env.items() for x in ("-genv", k, v)]
            cmd = head + ["--mpich", "--", *gs, *prog]
            note += " under goal-cluster's hydra (UCX_TLS=self,tcp,posix,sysv: small messages may cross hosts through shared memory, docs/cluster.md)"
        out.append(Config(setup, lib, cmd, {}, note.strip()))
    if a.libs:
        want = {x.strip() for x in a.libs.split(",") if x.strip()}
        out = [c for c in out if c.lib in want]
    return out


# ---------------------------------------------------------------------------------------
# running

def run_watched(cmd, env: dict, timeout: float, is_last=lambda line: '"test": "done"' in line
                ) -> tuple[C.Result, bool]:
    """Like common.run (own process group, killed on timeout), but the program's last row,
    {"test": "done"} (printed before GOAL_Finalize / MPI_Finalize; or the line for which
    is_last(line) holds), starts a grace period of FINALIZE_GRACE seconds after which the group
    is killed too. Returns (result, hung in finalize)."""
    cmd = [str(c) for c in cmd]
    if C.VERBOSE:
        C.log("+ " + " ".join(f"{k}={v}" for k, v in env.items()) + " " + " ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, **env}, cwd=C.REPO, start_new_session=True)
    out, err, done_at = [], [], []

    def read_out():
        for line in p.stdout:
            out.append(line)
            if not done_at and is_last(line):
                done_at.append(time.monotonic())

    readers = [threading.Thread(target=read_out), threading.Thread(target=lambda: err.append(p.stderr.read()))]
    for t in readers:
        t.start()
    t0 = time.monotonic()
    hung = timed_out = False
    while True:
        try:
            p.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            hung = bool(done_at) and now - done_at[0] > FINALIZE_GRACE
            timed_out = not hung and now - t0 > timeout
            if not (hung or timed_out):
                continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
                p.wait(timeout=5)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        break
    for t in readers:
        t.join(timeout=10)
    rc = p.returncode if p.returncode is not None else -9
    return C.Result(cmd, rc, "".join(out), "".join(err), time.monotonic() - t0, timed_out), hung


def run_one(a, setup: str, cfg: Config, rnd: int, pos: int, label: str) -> tuple[dict, list[dict]]:
    """One run of cfg (repeated up to --retries times while disturbed): (run record, rows)."""
    for attempt in range(a.retries + 1):
        idle, waited = C.wait_for_idle(a.wait_idle) if a.wait_idle > 0 else (None, 0.0)
        p0 = C.cpu_probe()
        c2c0 = p0.get("oneway_ns")
        C.log(f"[{label}] {cfg.lib} ..." + ("" if idle is not False else f" (machine still busy after {waited:.0f} s)"))
        with C.CpuMeter() as meter:
            res, hung = run_watched(cfg.cmd, cfg.env, a.timeout)
        st = meter.result
        p1 = C.cpu_probe()
        c2c1 = p1.get("oneway_ns")
        # Other processes' CPU use = busy CPU time minus this process' children's. No verdict
        # for a run killed in finalize (its ranks' CPU time is never reported) nor across the
        # emulated hosts (their launcher daemons are not waited for by this process).
        disturbed = st["foreign_pct"] > C.DISTURBED_PCT and not hung and SETUPS[setup][1] is None
        unstable = bool(c2c0 and c2c1 and not C.same_state(c2c0, c2c1))
        # between emulated hosts the data goes through the kernel's TCP: a run whose vCPU
        # state changed is recorded but not repeated there
        again = disturbed or (unstable and SETUPS[setup][1] is None)
        if not again or not (res.ok or hung) or attempt == a.retries:
            break
        C.log_again(disturbed, st["foreign_pct"], c2c0, c2c1)
    c2c = C.c2c_mean(c2c0, c2c1)
    got = C.parse_rows(res.stdout)
    meta = next((x for x in got if x.get("test") == "meta"), {})
    data = [x for x in got if x.get("test") not in ("meta", "done")]
    for x in data:
        x.update(setup=setup, lib=cfg.lib, round=rnd, c2c_ns=c2c)
    run = {"setup": setup, "lib": cfg.lib, "round": rnd, "position": pos, "rc": res.rc,
           "timed_out": res.timed_out, "seconds": round(res.seconds, 2), "c2c_ns": c2c,
           "c2c_before_ns": c2c0, "c2c_after_ns": c2c1, "cpu_ratio_before": p0.get("cpu_ratio"),
           "cpu_ratio_after": p1.get("cpu_ratio"), "rows": len(data), "meta": meta,
           "attempts": attempt + 1, "idle_wait_s": round(waited, 1), "disturbed": disturbed,
           "unstable": unstable, "ok": res.ok or hung, "finalize_hang": hung, **st}
    tail = res.stderr.strip().splitlines()[-30 if not res.ok else -10:]
    if tail:
        run["stderr_tail"] = tail
    if hung:
        C.warn(f"{setup}/{cfg.lib} round {rnd + 1}: all rows printed, but the program did not exit within "
               f"{FINALIZE_GRACE:.0f} s (hangs in finalize); killed, rows kept")
    elif not res.ok:
        run["failure"] = res.describe()
        C.warn(f"{setup}/{cfg.lib} round {rnd + 1} failed: {res.describe()}")
    skipped = [x for x in data if x.get("test") == "skipped"]
    if skipped:
        C.warn(f"{setup}/{cfg.lib}: {len(skipped)} point(s) skipped after --max-s {a.max_s}")
    C.log(f"    {len(data)} rows in {res.seconds:.1f} s (c2c {c2c} ns, foreign CPU {st['foreign_pct']}%)")
    return run, data


def run_setup(a, setup: str, configs: list[Config], counter: list[int], total: int):
    """--rounds rounds of every configuration (rotating order), then up to --catch-up more runs of
    each library that has no clean run in the vCPU state the summary will use."""
    rows, runs = [], []
    for r in range(a.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for pos, cfg in enumerate(order):
            counter[0] += 1
            run, data = run_one(a, setup, cfg, r, pos, f"{counter[0]}/{total}, {setup}, round {r + 1}")
            runs.append(run)
            rows += data
    for extra in range(a.catch_up):
        missing = set(state_choice(runs)[setup]["missing"])
        todo = [c for c in configs if c.lib in missing]
        if not todo:
            break
        C.log(f"{setup}: no clean run in the {state_choice(runs)[setup]['state']} vCPU state yet: "
              f"{', '.join(sorted(missing))}; catch-up run {extra + 1}/{a.catch_up}")
        for pos, cfg in enumerate(todo):
            run, data = run_one(a, setup, cfg, a.rounds + extra, pos, f"catch-up {extra + 1}, {setup}")
            runs.append(run)
            rows += data
    return rows, runs


# ---------------------------------------------------------------------------------------
# aggregation

KEY_FIELDS = ("setup", "lib", "test", "op", "bytes", "variant", "n", "phase")
NUMERIC = ("t_pure_us", "t_cpu_us", "t_ovrl_us", "overlap_pct", "quantum_us", "t_idle_ms", "t_comm_ms",
           "usage_pct", "usage_pct_max_rank", "hl_ratio", "added_us", "usage_vs_before_pct", "rate_before",
           "rate", "cost_pct", "cost_pct_max_rank", "helper_cpu_pct", "helper_cpu_pct_before", "start_us",
           "mm_us", "wait_us", "mm_alone_us", "loss_pct", "window_ms", "done_pct", "lost_pct", "lost_pct_max_rank",
           "t_bg_ms")


def state_choice(runs) -> dict:
    """{setup: {"state", "c2c_ns", "runs_per_state", "fast_ns", "missing"}}: the vCPU state the
    summary uses and the libraries without a clean run in it.

    The VM's two vCPUs jump between a fast and a slow state (core-to-core latency ~25 vs ~165 ns,
    bench/README.md), and shared-memory transfers move with it, so one state is summarized per
    setup: the one in which more libraries have a clean run (undisturbed, state unchanged during
    the run; ties: the fast one)."""
    out = {}
    ok = [r for r in runs if r["rows"]]
    for setup in sorted({r["setup"] for r in ok}):
        mine = [r for r in ok if r["setup"] == setup]
        c2cs = [r["c2c_ns"] for r in mine if C.isnum(r.get("c2c_ns"))]
        fast = min(c2cs) if c2cs else None
        libs = sorted({r["lib"] for r in mine})
        count = {st: sum(any(r["lib"] == lib and run_state(r, fast) == st and run_clean(r) for r in mine)
                         for lib in libs) for st in ("fast", "slow")}
        ref = "fast" if count["fast"] >= count["slow"] else "slow"
        in_ref = [r["c2c_ns"] for r in mine if run_state(r, fast) == ref and C.isnum(r.get("c2c_ns"))]
        out[setup] = {"state": ref, "c2c_ns": round(C.median(in_ref), 1) if in_ref else None, "fast_ns": fast,
                      "runs_per_state": {st: sum(run_state(r, fast) == st for r in mine) for st in ("fast", "slow")},
                      "missing": [lib for lib in libs if not any(r["lib"] == lib and run_clean(r)
                                                                 and run_state(r, fast) == ref for r in mine)]}
    return out


def run_state(r, fast) -> str:
    return "fast" if C.same_state(fast, r.get("c2c_ns")) else "slow"


def run_clean(r) -> bool:
    return not r["disturbed"] and not r["unstable"]


def select_runs(runs, all_states: bool):
    """(setup, lib, round) of the runs to summarize, notes, and state_choice(runs). A library
    without a clean run in the chosen state falls back to its undisturbed runs in that state,
    then to its clean runs in the other state, then to all."""
    ok = [r for r in runs if r["rows"]]
    if all_states:
        return {(r["setup"], r["lib"], r["round"]) for r in ok}, ["summary over all runs"], {}
    keep, notes = set(), []
    states = state_choice(runs)
    for setup, info in states.items():
        ref, fast = info["state"], info["fast_ns"]
        for lib in sorted({r["lib"] for r in ok if r["setup"] == setup}):
            rs = [r for r in ok if (r["setup"], r["lib"]) == (setup, lib)]
            for level, test in (("clean", lambda r: run_clean(r) and run_state(r, fast) == ref),
                                ("undisturbed", lambda r: not r["disturbed"] and run_state(r, fast) == ref),
                                ("other vCPU state", run_clean), ("any", None)):
                chosen = [r for r in rs if test is None or test(r)]
                if chosen:
                    break
            if level != "clean":
                notes.append(f"{setup}/{lib}: no clean run in the {ref} vCPU state; summarized its runs of "
                             f"level '{level}' (numbers suspect)")
            keep |= {(r["setup"], r["lib"], r["round"]) for r in chosen}
    return keep, notes, states


def summarize(rows, keep) -> dict:
    """key (setup, lib, test, op, bytes, variant, n, phase) -> {field: median over rounds, 'rounds': k}"""
    per: dict = {}
    for x in rows:
        if (x["setup"], x["lib"], x["round"]) not in keep or x.get("test") in ("skipped", "validate"):
            continue
        per.setdefault(tuple(x.get(k) for k in KEY_FIELDS), []).append(x)
    out = {}
    for k, xs in per.items():
        v = {"rounds": len(xs)}
        for f in NUMERIC:
            vals = [x[f] for x in xs if C.isnum(x.get(f))]
            if vals:
                v[f] = C.median(vals)
        if k[2] == "na":
            v["why"] = xs[0].get("why", "")
        out[k] = v
    return out


def get(summary, setup, lib, test, op=None, nbytes=None, variant=None, n=None, phase=None):
    return summary.get((setup, lib, test, op, nbytes, variant, n, phase))


# ---------------------------------------------------------------------------------------
# report

def op_label(op, nbytes) -> str:
    if op == "barrier":
        return "barrier"
    if op == "pingpong200":
        return "pingpong200 8 B"
    return f"{op} {C.fmt_bytes(nbytes)}"


def fmt_pct(v) -> str:
    return ("0" if round(v) == 0 else f"{v:.0f}") if C.isnum(v) else "-"


def short_version(v: str) -> str:
    """'MPICH Version: 4.0.2 MPICH Release date: ... Device: ch4:ucx ...' -> 'MPICH 4.0.2 (ch4:ucx)'"""
    m = re.search(r"MPICH Version:\s*(\S+)", v)
    if m:
        dev = re.search(r"MPICH Device:\s*(\S+)", v)
        return f"MPICH {m.group(1)}" + (f" ({dev.group(1)})" if dev else "")
    return C.short_version(v)


def ops_in(summary, setup):
    present = {(k[3], k[4]) for k in summary if k[0] == setup and k[2] in ("overlap", "cpu", "background", "na")}
    return [o for o in OPS if o in present]


def bg_window_ms(summary, setup) -> float:
    """the background test's computation window (the same for every library and op)"""
    win = [v["window_ms"] for k, v in summary.items()
           if k[0] == setup and k[2] == "background" and C.isnum(v.get("window_ms"))]
    return C.median(win) if win else float("nan")


def report_setup(summary, setup, libs, ncpu, state) -> str:
    ranks, hosts, title = SETUPS[setup]
    out = [f"== {title}"]
    if hosts is None:
        out.append(f"{ranks} ranks on {ncpu} CPUs: fully subscribed (every core computes; progress threads run on "
                   "their rank's core, or where the library pinned them: goal's share one CPU)")
    else:
        out.append(f"{hosts} emulated hosts share this machine's {ncpu} CPUs: {ranks} computing ranks on {ncpu} cores"
                   + (" (more ranks than cores: oversubscribed)" if ranks > ncpu else ""))
    if state:
        out.append(f"vCPU state of the summarized runs: {state['state']} (core-to-core latency ~{state['c2c_ns']} ns; "
                   f"runs per state: {state['runs_per_state']})")
    libs = [l for l in libs if any(k[0] == setup and k[1] == l for k in summary)]
    ops = ops_in(summary, setup)
    if not libs or not ops:
        out.append("(no results)")
        return "\n".join(out)
    short = [l.replace("goal-", "g-") for l in libs]

    def cell2(test, field, op, nb, lib, fmt=fmt_pct, paren=None, n=None, variants=VARIANTS):
        """the field of each variant (field: a name or a tuple of names), joined by ' / '"""
        if get(summary, setup, lib, "na", op, nb):
            return "n/a"
        vals = []
        for var in variants:
            s = get(summary, setup, lib, test, op, nb, var, n)
            for f in (field,) if isinstance(field, str) else field:
                v = s.get(f) if s else None
                txt = fmt(v)
                if s and paren and paren(s):
                    txt = f"({txt})"
                vals.append(txt)
        return " / ".join(vals)

    def has(test):
        return any(k[0] == setup and k[2] == test for k in summary)

    unresolved = lambda s: C.isnum(s.get("t_pure_us")) and C.isnum(s.get("t_cpu_us")) and \
        s["t_pure_us"] < UNRESOLVED * s["t_cpu_us"]  # noqa: E731
    if has("overlap"):
        out.append("")
        out.append("overlap % (IMB-NBC), no progress calls / a progress call per chunk; "
                   f"( ) = t_pure below {UNRESOLVED * 100:.0f}% of t_cpu, not resolvable")
        rows = [[op_label(*o)] + [cell2("overlap", "overlap_pct", *o, l, paren=unresolved) for l in libs]
                for o in ops]
        out.append(C.table(["op"] + short, rows))
        out.append("")
        out.append("t_pure [us] (start + wait alone) / t_cpu [us] (the calibrated computation)")
        rows = []
        for o in ops:
            row = [op_label(*o)]
            for l in libs:
                s = get(summary, setup, l, "overlap", *o, "none")
                row.append("n/a" if get(summary, setup, l, "na", *o) else
                           f"{C.fmt_num(s.get('t_pure_us'))} / {C.fmt_num(s.get('t_cpu_us'))}" if s else "-")
            rows.append(row)
        out.append(C.table(["op"] + short, rows))
    if has("cpu"):
        out.append("")
        out.append("CPU usage % (KACC: 1 - W_comm/W_idle, collective back to back), no progress calls / with")
        rows = [[op_label(*o)] + [cell2("cpu", "usage_pct", *o, l) for l in libs] for o in ops]
        out.append(C.table(["op"] + short, rows))
        out.append("")
        out.append("Hoefler/Lumsdaine work-based: T_comm/T_idle for the same work, and the time each op added [us] "
                   "(no progress calls)")
        rows = []
        for o in ops:
            row = [op_label(*o)]
            for l in libs:
                s = get(summary, setup, l, "cpu", *o, "none")
                row.append("n/a" if get(summary, setup, l, "na", *o) else
                           f"{s['hl_ratio']:.2f} (+{C.fmt_num(s.get('added_us'))})"
                           if s and C.isnum(s.get("hl_ratio")) else "-")
            rows.append(row)
        out.append(C.table(["op"] + short, rows))
    if has("background"):
        out.append("")
        out.append(f"background: finished during a {bg_window_ms(summary, setup):g} ms computation "
                   "(% of repetitions, min over ranks) / computation lost % (1 - T_idle/T_bg, mean over ranks); "
                   "no library calls while computing")
        rows = [[op_label(*o)] + [cell2("background", ("done_pct", "lost_pct"), *o, l, variants=(None,))
                                  for l in libs] for o in ops]
        out.append(C.table(["op"] + short, rows))
    if has("idle"):
        out.append("")
        out.append("idle cost % = 1 - R/R_before (R: work rate; after init | after collectives finished); "
                   "helper CPU % = other threads' CPU time, mean per rank")
        rows = []
        for l in libs:
            i, f = get(summary, setup, l, "idle", phase="init"), get(summary, setup, l, "idle", phase="after")
            rows.append([l, fmt_pct(i.get("cost_pct")) if i else "-", fmt_pct(f.get("cost_pct")) if f else "-",
                         C.fmt_num(i.get("helper_cpu_pct"), 1) if i else "-",
                         C.fmt_num(f.get("helper_cpu_pct"), 1) if f else "-"])
        out.append(C.table(["library", "idle cost % init", "after colls", "helper CPU % init", "after colls"], rows))
    ns = sorted({k[6] for k in summary if k[0] == setup and k[2] == "hostoverhead"})
    if ns:
        out.append("")
        out.append("host overhead (thesis 6.6): time in the wait [us], no progress calls / a progress call per "
                   "block product; multiply alone [us] in the op column")
        rows = []
        for o in ops:
            for n in ns:
                alone = [s.get("mm_alone_us") for l in libs
                         for s in [get(summary, setup, l, "hostoverhead", *o, "none", n)] if s]
                if not alone:
                    continue
                row = [f"{op_label(*o)}, N={n} ({C.fmt_num(C.median(alone))})"]
                row += [cell2("hostoverhead", "wait_us", *o, l, fmt=C.fmt_num, n=n) for l in libs]
                rows.append(row)
        out.append(C.table(["op, N (multiply alone us)"] + short, rows))
        out.append("")
        out.append("host overhead: loss % = (start + multiply) / multiply alone - 1, no progress calls / with, "
                   f"at the largest N ({ns[-1]})")
        rows = [[op_label(*o)] + [cell2("hostoverhead", "loss_pct", *o, l, n=ns[-1],
                                        fmt=lambda v: f"{v:.1f}" if C.isnum(v) else "-") for l in libs] for o in ops]
        out.append(C.table(["op"] + short, [r for r in rows if any(c not in ("-", "- / -") for c in r[1:])]))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# plots

LIB_COLORS = {"goal-manual": "#f4a582", "goal-thread": "#d62728", "goal-spin": "#8c2d04",
              "goal-auto": "#e377c2", "goal-kernel": "#9467bd", "goal-thread-rt": "#7f0000", "openmpi": "#1f77b4",
              "mpich": "#2ca02c", "mpich-async": "#98df8a", ccl.NAME: "#0068b5"}


def color(lib):
    return LIB_COLORS.get(lib, C.style(lib).get("color", "grey"))


BAR_PANELS = [("overlap", "overlap_pct", "none", "overlap % (IMB-NBC), no progress calls"),
              ("overlap", "overlap_pct", "progress", "overlap %, a progress call per chunk"),
              ("cpu", "usage_pct", "none", "CPU usage % (KACC), no progress calls"),
              ("cpu", "usage_pct", "progress", "CPU usage %, a progress call per chunk")]
BACKGROUND_PANELS = [("background", "done_pct", None, "finished during the computation, % of repetitions "
                      "(min over ranks)"),
                     ("background", "lost_pct", None, "computation lost %: 1 - T_idle / T_bg (mean over ranks)")]


def plot_bars(plt, summary, setup, libs, path: Path, title: str, panels=BAR_PANELS, note: str | None = None) -> None:
    """One panel per (test, field, variant, title) of panels: grouped bars per op, one per library."""
    if not any(k[0] == setup and k[2] in {p[0] for p in panels} for k in summary):
        return
    ops = ops_in(summary, setup)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(10, 1.6 * len(ops) * len(libs) / 4), 3.2 * len(panels)),
                             constrained_layout=True)
    width = 0.8 / max(1, len(libs))
    for ax, (test, fld, var, ttl) in zip(axes, panels):
        for i, lib in enumerate(libs):
            xs, ys, hatch = [], [], []
            for j, o in enumerate(ops):
                s = get(summary, setup, lib, test, *o, var)
                if s and C.isnum(s.get(fld)):
                    xs.append(j - 0.4 + (i + 0.5) * width)
                    ys.append(s[fld])
                    hatch.append(test == "overlap" and C.isnum(s.get("t_pure_us")) and C.isnum(s.get("t_cpu_us"))
                                 and s["t_pure_us"] < UNRESOLVED * s["t_cpu_us"])
            bars = ax.bar(xs, ys, width=width * 0.95, color=color(lib), label=lib)
            for b, h in zip(bars, hatch):
                if h:
                    b.set_alpha(0.35)
            if test == "background":
                for x, y in zip(xs, ys):
                    ax.text(x, max(y, 0), fmt_pct(y), ha="center", va="bottom", fontsize=7)
        ax.set_xlim(-0.5, len(ops) - 0.5)
        ax.set_xticks(range(len(ops)))
        ax.set_xticklabels([op_label(*o) for o in ops], fontsize=8)
        lo, hi = ax.get_ylim()
        if fld == "lost_pct":  # small, and noise can make it negative
            ax.set_ylim(min(0, lo), max(10, 1.1 * hi))
        elif fld == "done_pct":  # room for the legend above the 100% bars
            ax.set_ylim(0, 122)
            ax.set_yticks(range(0, 101, 20))
        else:
            ax.set_ylim(0, 105 if fld == "overlap_pct" else max(100, hi))
        for j, o in enumerate(ops):
            slots = [j - 0.4 + (i + 0.5) * width for i, lib in enumerate(libs) if get(summary, setup, lib, "na", *o)]
            if slots:  # where the bars of the libraries without this op would be
                ax.text(sum(slots) / len(slots), 0, "n/a", ha="center", va="bottom", fontsize=8, color="grey")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_ylabel("%")
        ax.set_title(ttl, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    from matplotlib.patches import Patch
    axes[0].legend(handles=[Patch(color=color(l), label=l) for l in libs], fontsize=8, ncol=min(len(libs), 8),
                   loc="upper left")
    if note is None:
        note = f"(faded overlap bars: t_pure < {UNRESOLVED * 100:.0f}% of t_cpu, not resolvable)"
    fig.suptitle(title + "\n" + note, fontsize=11)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_hostoverhead(plt, summary, setup, libs, path: Path, title: str) -> None:
    import matplotlib.ticker as mt
    ops = [o for o in ops_in(summary, setup)
           if any(k[0] == setup and k[2] == "hostoverhead" and (k[3], k[4]) == o for k in summary)]
    if not ops:
        return
    cols = 4
    prow = (len(ops) + cols - 1) // cols
    fig, axes = plt.subplots(2 * prow, cols, figsize=(4.2 * cols, 3.3 * 2 * prow), constrained_layout=True,
                             squeeze=False)
    for idx, o in enumerate(ops):
        aw, al = axes[2 * (idx // cols)][idx % cols], axes[2 * (idx // cols) + 1][idx % cols]
        for lib in libs:
            for var, ls in (("none", "-"), ("progress", "--")):
                pts = sorted((k[6], v) for k, v in summary.items()
                             if k[:6] == (setup, lib, "hostoverhead", o[0], o[1], var))
                if not pts:
                    continue
                xs = [n for n, _ in pts]
                lab = lib if var == "none" else None
                aw.plot(xs, [max(v.get("wait_us", float("nan")), 0.1) for _, v in pts], ls, color=color(lib),
                        marker="o", markersize=3, label=lab)
                al.plot(xs, [v.get("loss_pct", float("nan")) for _, v in pts], ls, color=color(lib), marker="o",
                        markersize=3)
        for ax in (aw, al):
            ax.set_xscale("log", base=2)
            xs = sorted({k[6] for k in summary if k[0] == setup and k[2] == "hostoverhead"})
            ax.set_xticks(xs)
            ax.set_xticklabels([str(x) for x in xs], fontsize=8)
            ax.grid(True, alpha=0.3)
        aw.set_yscale("log")
        aw.set_title(f"{op_label(*o)}: time in wait", fontsize=10)
        aw.set_ylabel("µs (log)")
        al.set_title(f"{op_label(*o)}: multiply slowed by", fontsize=10)
        al.set_ylabel("loss % (symlog)")
        al.set_yscale("symlog", linthresh=10)
        lo, hi = al.get_ylim()
        al.set_ylim(min(lo, -10), max(hi, 30))
        al.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
        al.set_xlabel("matrix size N")
        al.axhline(0, color="black", linewidth=0.6)
    for idx in range(len(ops), prow * cols):
        axes[2 * (idx // cols)][idx % cols].set_visible(False)
        axes[2 * (idx // cols) + 1][idx % cols].set_visible(False)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title + "\nstart; N x N blocked multiply; wait — solid: no progress calls, dashed: a progress "
                 "call after each 32x32 block product; loss % = (start + multiply) / multiply alone - 1",
                 fontsize=11)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_idle(plt, summary, setup, libs, path: Path, title: str) -> None:
    if not any(k[0] == setup and k[2] == "idle" for k in summary):
        return
    fig, ax = plt.subplots(figsize=(max(7, 1.1 * len(libs)), 4), constrained_layout=True)
    series = [("init", "cost_pct", "idle cost %, after init", 1.0),
              ("after", "cost_pct", "idle cost %, after collectives finished", 0.6),
              ("after", "helper_cpu_pct", "helper threads' CPU % (after)", None)]
    w = 0.8 / len(series)
    for si, (phase, fld, lab, alpha) in enumerate(series):
        xs, ys, cs = [], [], []
        for i, lib in enumerate(libs):
            s = get(summary, setup, lib, "idle", phase=phase)
            if s and C.isnum(s.get(fld)):
                xs.append(i - 0.4 + (si + 0.5) * w)
                ys.append(s[fld])
                cs.append(color(lib))
        if alpha is None:
            ax.bar(xs, ys, width=w * 0.95, color="none", edgecolor=cs, hatch="//", label=lab)
        else:
            ax.bar(xs, ys, width=w * 0.95, color=cs, alpha=alpha, label=lab)
        for x, y in zip(xs, ys):
            ax.text(x, max(y, 0), f"{y:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(libs)))
    ax.set_xticklabels(libs, fontsize=8, rotation=20)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("%")
    ax.set_ylim(min(-5, ax.get_ylim()[0]), max(60, ax.get_ylim()[1]))
    ax.grid(True, axis="y", alpha=0.3)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="grey", label=series[0][2]), Patch(color="grey", alpha=0.6, label=series[1][2]),
                       Patch(facecolor="none", edgecolor="grey", hatch="//", label=series[2][2])], fontsize=8)
    ax.set_title(title + "\nidle cost = 1 - work rate / work rate before init (nothing in flight)", fontsize=10)
    fig.savefig(path, dpi=80)
    plt.close(fig)


# ---------------------------------------------------------------------------------------

NET_COST_MIB = 256


def rail_addr(ns: str) -> str | None:
    """The IPv4 address of rail0 in network namespace ns (an emulated host), if it has one."""
    try:
        return subprocess.run(["ip", "netns", "exec", ns, "ip", "-4", "-o", "addr", "show", "rail0"],
                              capture_output=True, text=True, timeout=10).stdout.split()[3].split("/")[0]
    except (IndexError, OSError, subprocess.SubprocessError):
        return None


def net_cost(cname: str, tries: int = 2) -> dict | None:
    """net_cost_once (below) `tries` times, the least cost kept: another process's CPU time counts
    in machine-wide busy time and can only add to it (one run read 9,414 us per MiB with a plot
    being drawn beside it, against 508-1,172 otherwise). "tries" keeps every cost read."""
    got = [c for c in (net_cost_once(cname) for _ in range(tries)) if c is not None]
    if not got:
        return None
    return dict(min(got, key=lambda c: c["cpu_us_per_mib"]), tries=[c["cpu_us_per_mib"] for c in got])


def net_cost_once(cname: str) -> dict | None:
    """The CPU time the emulated network itself takes to move bytes: machine-wide busy time
    (/proc/stat) during a NET_COST_MIB MiB TCP transfer from host 0 to host 1 by two small
    Python programs (1 MiB sendall / recv_into: about the least a TCP user can do). The
    emulated hosts' kernels (TCP, veth, bridge, tbf) run on this machine's CPUs, where on a
    real cluster the NICs and the other hosts' CPUs would do that work: it is a floor under
    what any library's transfers take from a computation here. /proc/stat counts in 10 ms
    steps: the 2.3 s transfer of 256 MiB resolves the cost to about 5 %."""
    ns = [f"goal-{cname}-h{h}" for h in (0, 1)]
    addr = rail_addr(ns[1])
    if addr is None:
        return None
    recv = ("import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            f"s.bind(('{addr}', 5999)); s.listen(1); print('ready', flush=True)\n"
            "c,_=s.accept(); m=memoryview(bytearray(1<<20)); n=0\n"
            "while True:\n    k=c.recv_into(m)\n    if k==0: break\n    n+=k\nprint(n)\n")
    send = (f"import socket, sys\ns=socket.create_connection(('{addr}', 5999)); b=bytes(1<<20)\n"
            "print('ready', flush=True); sys.stdin.readline()\n"
            f"for i in range({NET_COST_MIB}): s.sendall(b)\ns.close()\n")

    def busy() -> tuple[int, int]:
        v = list(map(int, open("/proc/stat").readline().split()[1:9]))
        return sum(v) - v[3] - v[4], v[3] + v[4]

    r = subprocess.Popen(["ip", "netns", "exec", ns[1], "python3", "-c", recv], stdout=subprocess.PIPE, text=True)
    w = None
    try:
        if r.stdout.readline().strip() != "ready":
            return None
        # Both interpreters started and connected before the clock starts.
        w = subprocess.Popen(["ip", "netns", "exec", ns[0], "python3", "-c", send], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        if w.stdout.readline().strip() != "ready":
            return None
        b0, _ = busy()
        t0 = time.time()
        w.stdin.write("go\n")
        w.stdin.flush()
        w.wait(timeout=120)
        got = int(r.communicate(timeout=60)[0].strip() or 0)
        t1 = time.time()
        b1, _ = busy()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    finally:
        for p in (r, w):
            if p and p.poll() is None:
                p.kill()
    if got != NET_COST_MIB << 20:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    return {"mib": NET_COST_MIB, "seconds": round(t1 - t0, 3),
            "mbit_s": round(NET_COST_MIB * 8.388608 / (t1 - t0), 1),
            "cpu_us_per_mib": round((b1 - b0) / hz / NET_COST_MIB * 1e6, 1)}


def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    C.BUILD = a.build_dir          # the c2c probe is built there too
    out = Path(a.out)
    if not out.is_absolute():
        out = Path.cwd() / out
    if out.suffix in (".json", ".png"):
        out = out.with_suffix("")
    t_start = time.time()
    machine = C.machine_info()
    ncpu = machine["nproc"] or 1
    cluster = any(SETUPS[s][1] for s in a.setups)
    if cluster and os.geteuid() != 0:
        C.die("the cluster setups need root (network namespaces, see crates/goal-netns)")
    if machine["loadavg_start"] and machine["loadavg_start"][0] > 0.5:
        C.warn(f"load average is {machine['loadavg_start'][0]:.2f}: something else is running "
               f"({', '.join(C.busy_processes()) or 'see top'}); results will be noisy")
    exes, libinfo = build(a)
    if not exes:
        C.die("nothing to run")
    tool = C.cluster_tool(a.cluster_tool) if cluster else None
    cname = f"ov{os.getpid() % 100000}" if cluster else None
    per_setup = {s: configs_for(a, s, exes, cname, tool) for s in a.setups}
    total = a.rounds * sum(len(v) for v in per_setup.values())
    if not total:
        C.die("nothing to run (check --libs)")
    notes: list[str] = []
    netcost = None
    rows, runs = [], []
    counter = [0]
    try:
        if cluster:
            C.run([tool, "down", "--name", cname], timeout=60)
            hosts = max(SETUPS[s][1] for s in a.setups if SETUPS[s][1])
            C.run([tool, "up", "--name", cname, "--hosts", str(hosts), "--rails", "1", "--rate", RATE],
                  timeout=120, check=True)
            netcost = net_cost(cname)
        for setup in a.setups:
            if per_setup[setup]:
                C.log(f"{setup}: {', '.join(c.lib for c in per_setup[setup])}; {a.rounds} round(s)")
                r, u = run_setup(a, setup, per_setup[setup], counter, total)
                rows += r
                runs += u
    except C.BenchError as e:
        C.die(str(e))
    finally:
        if cluster:
            C.run([tool, "down", "--name", cname], timeout=60)
    elapsed = time.time() - t_start

    # library facts from the programs' meta rows
    for run in runs:
        meta = run.get("meta") or {}
        base = "goal" if run["lib"].startswith("goal") else run["lib"].replace("-async", "")
        info = libinfo.setdefault(base, {})
        if meta.get("version") and base != "goal":
            info["version"] = " ".join(str(meta["version"]).split())
        if meta.get("thread_provided"):
            info["thread_provided"] = meta["thread_provided"]
        if "ns_per_unit" in meta:
            info.setdefault("ns_per_unit", []).append(meta["ns_per_unit"])
    keep, sel_notes, states = select_runs(runs, a.all_states)
    notes += sel_notes
    summary = summarize(rows, keep)
    libs = list(dict.fromkeys(c.lib for s in a.setups for c in per_setup[s]))

    failed = [r for r in runs if not r["ok"]]
    hangs = [r for r in runs if r["finalize_hang"]]
    if hangs:
        notes.append(f"{len(hangs)} run(s) printed every row but did not exit within {FINALIZE_GRACE:.0f} s "
                     "(stuck in MPI_Finalize / GOAL_Finalize; killed, rows kept): "
                     + ", ".join(f"{r['setup']}/{r['lib']}#{r['round'] + 1}" for r in hangs))
    for r in failed:
        notes.append(f"FAILED {r['setup']}/{r['lib']} round {r['round'] + 1}: {r['failure']}")
    skipped = sorted({(x["setup"], x["lib"], x.get("what"), x.get("op"), x.get("bytes"), x.get("n"))
                      for x in rows if x.get("test") == "skipped"})
    if skipped:
        notes.append(f"{len(skipped)} point(s) skipped after --max-s {a.max_s} s: "
                     + "; ".join(f"{s}/{l} {w} {o} {b} B N={n}" for s, l, w, o, b, n in skipped[:12])
                     + (" ..." if len(skipped) > 12 else ""))
    wrong = [x for x in rows if x.get("test") == "validate"]
    for x in wrong:
        notes.append(f"WRONG RESULT {x['setup']}/{x['lib']}: {x.get('op')} {x.get('bytes')} B (nothing timed)")
    dist = [f"{r['setup']}/{r['lib']}#{r['round'] + 1} ({r['foreign_pct']}%)" for r in runs if r["disturbed"]]
    if dist:
        notes.append(f"{len(dist)} run(s) shared the CPUs with other processes even after retries: {', '.join(dist)}")
    doc = next((ln for ln in (C.REPO / "docs" / "api.md").read_text().splitlines()
                if ln.startswith("| `GOAL_PROGRESS` |")), "") if (C.REPO / "docs" / "api.md").exists() else ""
    if doc and any(l.startswith("goal-") for l in libs):
        cells = [c.strip().replace("`", "") for c in doc.strip("|").split("|")]
        notes.append(f"GOAL_PROGRESS, as docs/api.md describes it: {cells[1]}; default {cells[2]}")
    if "mpich-async" in libs:
        notes.append("mpich-async: MPIR_CVAR_ASYNC_PROGRESS=1 starts a progress thread per rank that polls "
                     "continuously (MPI_THREAD_MULTIPLE)")
    provided = {r["meta"].get("thread_provided") for r in runs if r["lib"] == "mpich-async" and r.get("meta")}
    if provided - {"MPI_THREAD_MULTIPLE"}:
        notes.append(f"mpich-async: MPI_Init_thread provided {', '.join(sorted(map(str, provided)))}, not "
                     "MPI_THREAD_MULTIPLE: MPICH's asynchronous progress may not have been on")
    if cluster:
        notes.append(f"cluster: goal-cluster {cname}, one rail at {RATE} (tc tbf) per host; the emulated hosts "
                     f"share this machine's {ncpu} CPUs; goal (GOAL_RAILS=rail0) and Open MPI (btl tcp,self) run "
                     "under goal-cluster's Open MPI mpirun, MPICH under its hydra (goal-cluster mpirun --mpich: "
                     "UCX_TLS=self,tcp,posix,sysv: small messages may cross hosts through shared memory, docs/cluster.md)")
    if netcost:
        notes.append(f"the emulated network's own CPU cost: {netcost['cpu_us_per_mib']:.0f} us of CPU per MiB moved "
                     f"(machine-wide busy time during a {netcost['mib']} MiB TCP transfer between two emulated hosts "
                     f"by plain sockets, {netcost['mbit_s']:.0f} Mbit/s). The hosts' kernels run on this machine's "
                     "CPUs, so every MiB a collective moves takes that much from the computing ranks, whoever "
                     "progresses it: with c = that cost x MiB moved in all / CPUs, overlap % cannot exceed "
                     "100 (1 - c / t_pure) here")
    elif cluster:
        notes.append("the emulated network's own CPU cost could not be measured")
    if any(SETUPS[s][0] > ncpu for s in a.setups):
        notes.append(f"with more computing ranks than CPUs (R on {ncpu}), the R/{ncpu} computations that share a "
                     "CPU take R/CPUs times one computation's CPU time together, whoever progresses the operation, "
                     "while t_cpu is timed with the ranks staggered (the first rank out of the preceding barrier "
                     "computes alone): for an operation about as long as one computation, the IMB overlap is then "
                     "bounded near 0 for any library whose t_cpu shows no contention (see bench/README.md)")
    if (n := C.cpu_ratio_note(runs)):
        notes.append(n)
    notes.append("the VM's vCPUs are time-shared by its host: the work rate can drop by up to 3x for seconds "
                 "without any sign in /proc/stat, so the program compares adjacent, interleaved measurements "
                 "and the tables take medians over rounds")

    text = "\n\n".join(report_setup(summary, s, libs, ncpu, states.get(s)) for s in a.setups)
    print()
    print(text)
    print()
    print(f"machine: {machine['hostname']}, {ncpu} CPUs ({machine['cpu_model']}), kernel {machine['kernel']}; "
          f"binding: {'none' if a.no_pin else 'every thread of rank r on CPU r % ncpus (--pin)'}")
    for lib, info in libinfo.items():
        if info.get("version"):
            print(f"{lib}: {short_version(info['version'])}")
    for nt in notes:
        print(f"NOTE: {nt}")
    for r in failed:
        print(f"FAILED: {r['setup']}/{r['lib']} round {r['round'] + 1} ({'timed out' if r['timed_out'] else 'rc ' + str(r['rc'])}), "
              "stderr tail:\n    " + "\n    ".join(r.get("stderr_tail", ["(empty)"])))
    print(f"{len(runs)} runs in {elapsed:.0f} s")

    result = {
        "benchmark": "overlap",
        "method": __doc__,
        "command": " ".join([sys.executable, *sys.argv]),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "machine": dict(machine, loadavg_end=C.loadavg()),
        "libraries": libinfo,
        "configs": [{"setup": c.setup, "lib": c.lib, "cmd": c.cmd, "env": c.env, "note": c.note}
                    for s in a.setups for c in per_setup[s]],
        "summary": [dict(zip(KEY_FIELDS, k), **v) for k, v in summary.items()],
        "vcpu_state": states,
        "net_cost": netcost,
        "runs": runs,
        "rows": rows,
        "notes": notes,
        "table": text,
        "seconds": round(elapsed, 1),
    }
    C.write_json(out.with_suffix(".json"), result)
    written = [out.with_suffix(".json")]
    plt = C.pyplot()
    if plt is not None:
        for s in a.setups:
            libs_s = [l for l in libs if any(k[0] == s and k[1] == l for k in summary)]
            if not libs_s:
                continue
            base = out.parent / (out.name + ("" if s == "local" else f"_{s}"))
            title = (f"{SETUPS[s][2]} — {machine['hostname']}, {ncpu} CPUs, {time.strftime('%Y-%m-%d')}, "
                     f"median of {a.rounds} round(s)" + (" [quick]" if a.quick else ""))
            plot_bars(plt, summary, s, libs_s, base.with_suffix(".png"), title)
            plot_hostoverhead(plt, summary, s, libs_s, base.parent / (base.name + "_hostoverhead.png"), title)
            plot_idle(plt, summary, s, libs_s, base.parent / (base.name + "_idle.png"), title)
            plot_bars(plt, summary, s, libs_s, base.parent / (base.name + "_background.png"), title,
                      panels=BACKGROUND_PANELS,
                      note=f"background: start; {bg_window_ms(summary, s):g} ms of computation "
                      "without library calls; one test call (GOAL_Test / MPI_Test); wait")
            written += [base.with_suffix(".png"), base.parent / (base.name + "_hostoverhead.png"),
                        base.parent / (base.name + "_idle.png"), base.parent / (base.name + "_background.png")]
    print("wrote " + ", ".join(str(p) for p in written if p.exists()))
    return 1 if any(r["lib"].startswith("goal") for r in failed) or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
