#!/usr/bin/env python3
"""Collective benchmark of goal against Open MPI and MPICH on this machine.

    python3 bench/coll.py --prefix DIR [--out results/coll] [--quick] [--rounds N] [--ranks 2,4]
    python3 bench/coll.py --no-goal            # the MPIs only

Method (the ESPGOAL thesis, section 6.5): every rank times each iteration of the
collective (goal: GOAL_Run + GOAL_Wait of a persistent GOAL_Xxx_init schedule; MPI: the
blocking call, MPI_Ixxx + MPI_Wait, or MPI_Start + MPI_Wait of a persistent request); for
bcast, gather, scatter and reduce, which do not synchronise the group, every rank enters a
barrier before each timed iteration; the times are averaged over the ranks per iteration,
and the median over iterations is the run's value (each rank's median is kept too, as
rank_median_us). See bench/goal_coll.c and bench/mpi_coll.c.

That barrier (the separator) is the same for every library: a shared-memory barrier of the
benchmark's own (bench/separator.h), in a fresh file per run. Which rank leaves a barrier
first moves time between collectives whose root sends and those whose root receives, and
each library's own barrier orders its ranks differently (bench/separator.h has the
figures); --separator own measures with each library's barrier instead.

Every collective (barrier, bcast, gather, scatter, allgather, alltoall, reduce, allreduce,
reduce_scatter_block, and allgatherv and alltoallv with equal blocks against MPI_Allgatherv and
MPI_Alltoallv), every goal algorithm and GOAL_ALG_AUTO, sizes 8 B .. 4 MiB per rank
(gather also 500 KiB per rank), with 2 and 4 ranks, against:

    goal               DIR/bin/goalrun -n N build/bench/goal_coll --pin
    openmpi            mpirun.openmpi -n N --bind-to none ... --pin   (blocking, nonblocking, persistent)
    openmpi-nosc       the same with --mca btl_vader_single_copy_mechanism none
    mpich              mpirun.mpich -n N -bind-to none ... --pin      (blocking, nonblocking, persistent)
    oneccl             Intel oneCCL, mpi_coll.c built against it, under mpirun.mpich (blocking: a
                       ccl:: call + wait), where scripts/install-oneccl.sh installed it (bench/ccl.py);
                       in the tables and plots, not in "best MPI"
    oneccl-shm         the same with CCL_ATL_SHM=1 CCL_WORKER_OFFLOAD=0: libfabric's shared-memory
                       provider, collectives progressed by the calling thread (bench/ccl.py says why)

Binding as in bench/p2p.py: launcher binding off, each program pins rank r to CPU r % ncpus.
With more ranks than CPUs (4 ranks on 2 cores) ranks share CPUs; the output says so.
Each round runs every configuration once (rotating the order); before each run the harness
waits for an idle machine and probes the core-to-core latency (bench/c2c.c), and repeats a
run disturbed by other processes or by a change of the vCPUs' state. The summary takes the
rounds in which every library's run was clean (fast core-to-core state, undisturbed), the
same rounds for every library, and the median over them (bench/common.py, select_clean).

Close calls are measured again. The best MPI setting of a point is the fastest of up to nine
medians (three libraries, three variants), several of them the same transfer measured twice,
so the closer they are, the more the minimum favours MPI; and the rounds of two libraries run
minutes apart, in whatever state the host left the machine. So every ratio target that goal
meets by less than 5 % or misses is measured again in --pairs pairs of back-to-back runs of
just that point, goal's AUTO and the MPI setting the rounds picked (goal first in every other
pair), and the median over the pairs of goal/MPI decides it, either way. A pair counts only
when its two runs saw the vCPUs in the same state (the core-to-core probe, see
common.same_state): the host moves them every few seconds, and a pair across a move compared
the two states, not the libraries (seen: a 2-rank barrier, goal 0.54 us at 166 ns core to
core against Open MPI 0.22 at 27 ns, where both took 0.22-0.24 in one state and 0.46-0.54 in
the other); such a pair is run again, up to as many extra pairs as were asked. The report
gives both verdicts and the JSON every pair.

A setting whose loop ran more than CYCLE_BOUND times as long per iteration as goal AUTO's
(cycle_us: rank 0's wall time over the timed loop, separators included) is not the best
setting of bcast, gather, scatter or reduce: those are timed from the separator, and a library
whose waiting ranks keep their CPU (MPICH with more ranks than cores) loses its time inside the
separator, where no rank's own timing sees it. The report names such a setting ("loop").

Targets: at 2 ranks, goal's AUTO within 1.2x of the best MPI setting at 8 B and no slower from
64 KiB. With more ranks than CPUs (issue 43: 4 ranks on 2 cores) the same bounds, and, when
--goal-progress runs goal's progress modes, AUTO within 1.1x of the fastest of them ("mode"
in the report; its close calls are paired with that mode's runs the same way), leaving out the
mode AUTO resolves to there (one barrier run with GOAL_DEBUG=1 says which): those two are one
configuration. Otherwise,
above 2 ranks, within 2x of Open MPI's best at 8 B. Up to 64 KiB above 2 ranks, under 1 ms.

Writes OUT.json (machine, commands, every row, the summary, the targets) and OUT.png
(per collective: time vs size, log-log, one line per library and goal algorithm).
--noise KIND,... runs all of it under each condition in turn (bench/noise.py): OUT.json then
holds one result per condition ("conditions"), every row and run says its "noise", and each
condition has its plot (OUT.png for none, OUT-noise-KIND.png).
Exit status: 1 if goal fails to build or run (or, with --strict, misses a target).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ccl  # noqa: E402
import common as C  # noqa: E402
import noise as N  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
COLLS = ["barrier", "bcast", "gather", "scatter", "allgather", "alltoall", "reduce", "allreduce",
         "reduce_scatter_block", "allgatherv", "alltoallv"]
SIZES = [8, 64, 512, 4 * KiB, 32 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB]
GATHER_EXTRA = 500 * KiB
QUICK_SIZES = [8, 4 * KiB, 64 * KiB, MiB]
MPI_LIBS = ("openmpi", "openmpi-nosc", "mpich")
# Peers beside the MPIs: in the tables and plots, not in "best MPI" (bench/ccl.py).
OTHER_PEERS = ccl.NAMES
OMPI_LIBS = ("openmpi", "openmpi-nosc")
# goal's progress modes as --goal-progress runs them (AUTO settles on one of them)
MODE_LIBS = tuple(f"goal-{m}" for m in ("manual", "thread", "spin", "kernel"))
VARIANTS = ("blocking", "nonblocking", "persistent")

# Reference points given with the task (best MPI measured on this machine, 2 ranks), in us.
REFERENCE = {("barrier", 0): 0.17, ("allreduce", 8): 0.23, ("allreduce", MiB): 82.0,
             ("bcast", MiB): 23.0, ("gather", GATHER_EXTRA): 19.0}


@dataclass
class Config:
    name: str            # library name: goal, goal-manual, openmpi, openmpi-nosc, mpich
    kind: str            # "goal" | "mpi"
    ranks: int
    cmd: list[str]
    env: dict = field(default_factory=dict)
    note: str = ""
    may_fail: bool = False  # a run that may abort by the library's fault (said in a NOTE, not traced)


# ---------------------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", type=Path, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "coll"),
                    help="output path without extension (default: results/coll)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: one round, sizes 8 B/4 KiB/64 KiB/1 MiB, short budgets")
    ap.add_argument("--rounds", type=int, help="runs of each configuration, interleaved (default 3, quick 1)")
    ap.add_argument("--ranks", default="2,4", help="comma list of rank counts (default 2,4)")
    ap.add_argument("--colls", default="", help="comma list of collectives (default: all)")
    ap.add_argument("--sizes", default="", help="comma list of sizes in bytes, K/M suffixes (default: "
                    "8,64,512,4K,32K,64K,256K,1M,4M and gather 500K)")
    ap.add_argument("--no-goal", action="store_true", help="skip goal (benchmark the MPIs only)")
    ap.add_argument("--goal-algs", default="all", help="goal algorithms: all (default), auto, or a list "
                    "(AUTO,RING,...)")
    ap.add_argument("--goal-progress", default="manual",
                    help="comma list of GOAL_PROGRESS modes to run as extra goal variants, AUTO only "
                         "(default: manual; 'none' for none)")
    ap.add_argument("--goal-env", action="append", default=[],
                    help="NAME:K=V[,K=V]: an extra goal variant with this environment "
                         "(e.g. goal-spin0:GOAL_SPIN_US=0); repeatable")
    ap.add_argument("--heap", action="store_true", help="also run goal with GOAL_Alloc buffers (goal-heap)")
    ap.add_argument("--no-oneccl", action="store_true", help="leave out Intel oneCCL (bench/ccl.py)")
    ap.add_argument("--libs", default="", help="comma list: run only these library names")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="MPI variants (default: all three)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin ranks (no binding at all)")
    ap.add_argument("--budget-ms", type=float, help="measuring time per point and run "
                    "(default 40 with 2 ranks, 25 with more; quick 8)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--wait-idle", type=float, help="wait up to this many seconds for an idle machine "
                    "before each run (default 15, quick 5)")
    ap.add_argument("--oversubscribed-mpich-rounds", type=int, default=1,
                    help="rounds in which MPICH runs with more ranks than CPUs (it stalls for milliseconds "
                         "there, so one round shows it; default 1)")
    ap.add_argument("--pairs", type=int, help="close calls (goal within 5%% of a ratio target, or past it) "
                    "are measured again in this many pairs of back-to-back runs of goal and the best MPI "
                    "setting, whose median ratio decides them (default 6, quick 0)")
    ap.add_argument("--retries", type=int, default=2, help="repeat a disturbed run up to N times (default 2)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a goal target is missed")
    ap.add_argument("--all-states", action="store_true",
                    help="summarize every run, also those made in a slow core-to-core state")
    ap.add_argument("--separator", choices=("shm", "own"), default="shm",
                    help="what separates the timed iterations of bcast, gather, scatter and reduce: shm "
                         "(default), one shared-memory barrier for every library (bench/separator.h); own, "
                         "each library's barrier (goal's recursive doubling, MPI_Barrier)")
    ap.add_argument("--touch", action="store_true",
                    help="every rank reads its result after each timed iteration; the summary is then "
                         "Run+Wait's median plus the read's (touch_us), not the thesis' time alone "
                         "(bench/coll_common.h says why)")
    N.add_args(ap)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    a = ap.parse_args()
    if not a.no_goal and a.prefix is None:
        ap.error("--prefix DIR is required (or --no-goal)")
    if a.rounds is None:
        a.rounds = 1 if a.quick else 3
    if a.wait_idle is None:
        a.wait_idle = 5 if a.quick else 15
    if a.pairs is None:
        a.pairs = 0 if a.quick else 6
    a.ranks = [int(x) for x in a.ranks.split(",") if x.strip()]
    return a


def program_args(a, ranks: int) -> list[str]:
    args = []
    if a.quick:
        args += ["--quick"]
    if not a.no_pin:
        args += ["--pin"]
    if a.colls:
        args += ["--colls", a.colls]
    sizes = a.sizes or (",".join(str(s) for s in QUICK_SIZES) if a.quick else "")
    if sizes:
        args += ["--sizes", sizes, "--gather-extra"]
    budget = a.budget_ms if a.budget_ms is not None else (8 if a.quick else (40 if ranks <= 2 else 25))
    args += ["--budget-ms", str(budget)]
    if not a.quick and ranks > 2:
        args += ["--min-iters", "7", "--max-iters", "500"]
    if a.separator == "shm":
        args += ["--sep-file", C.SEP_FILE]
    if a.touch:
        args += ["--touch"]
    return args


def build_and_configure(a) -> tuple[list[Config], dict]:
    configs: list[Config] = []
    libinfo: dict = {}
    deps = [C.BENCH / "p2p_common.h", C.BENCH / "coll_common.h", C.BENCH / "separator.h",
            C.BENCH / "mpi_persistent.h"]
    if not a.no_goal:
        try:
            goal = C.find_goal(a.prefix)
            exe = C.build_goal_program(goal, C.BENCH / "goal_coll.c", C.BUILD / "goal_coll", deps)
        except C.BenchError as e:
            C.die(f"goal: {e}")
        variants = [("goal", {}, "goal's defaults")]
        for mode in [m.strip() for m in a.goal_progress.split(",") if m.strip() and m.strip() != "none"]:
            variants.append((f"goal-{mode}", {"GOAL_PROGRESS": mode}, f"GOAL_PROGRESS={mode}"))
        for spec in a.goal_env:
            name, _, kv = spec.partition(":")
            env = dict(x.split("=", 1) for x in kv.split(",") if "=" in x)
            variants.append((name, env, " ".join(f"{k}={v}" for k, v in env.items())))
        if a.heap:
            variants.append(("goal-heap", {}, "buffers from GOAL_Alloc"))
        for n in a.ranks:
            for name, env, note in variants:
                cmd = [str(goal.goalrun), "-n", str(n), str(exe), "--name", name,
                       "--algs", a.goal_algs if name == "goal" else "auto", *program_args(a, n)]
                if name == "goal-heap":
                    cmd.append("--heap")
                configs.append(Config(name, "goal", n, cmd, env, note))
        libinfo["goal"] = {"prefix": str(goal.prefix), "version": goal.version}

    mpis = C.find_mpis()
    for name in ("openmpi", "mpich"):
        if name not in mpis:
            C.warn(f"{name} not found (run scripts/install-deps.sh); continuing without it")
    for name, mpi in mpis.items():
        try:
            exe = C.build_mpi_program(mpi, C.BENCH / "mpi_coll.c", C.BUILD / f"mpi_coll.{name}", deps)
        except C.BenchError as e:
            C.warn(f"{name}: build failed, skipping it:\n{e}")
            continue
        libinfo[name] = {"mpicc": mpi.mpicc, "mpirun": mpi.mpirun}
        variants = [(name, {}, "default settings")]
        if name == "openmpi":
            variants.append(("openmpi-nosc", {"btl_vader_single_copy_mechanism": "none"},
                             "btl_vader_single_copy_mechanism none"))
        for n in a.ranks:
            for vname, mca, note in variants:
                cmd, env = mpi.launch(n, [exe, vname, "--variants", a.variants, *program_args(a, n)],
                                      mca=mca, bind="none")
                configs.append(Config(vname, "mpi", n, cmd, env, note))
    if not a.no_oneccl:
        more, info = ccl.configs(a, mpis, deps, program_args, Config)
        configs += more
        if info:
            libinfo.update({name: info for name in ccl.NAMES})
    if a.libs:
        want = {x.strip() for x in a.libs.split(",") if x.strip()}
        configs = [c for c in configs if c.name in want]
    if not configs:
        C.die("nothing to run")
    return configs, libinfo


# ---------------------------------------------------------------------------------------

def run_all(a, configs: list[Config], tests=("coll",)):
    """Runs every configuration once per round (rotating the order; see run_once) and returns
    (rows whose "test" is one of `tests`, run records, failed (config, result) pairs)."""
    rows, runs, failures = [], [], []
    by_ranks: dict[int, list[Config]] = {}
    for c in configs:
        by_ranks.setdefault(c.ranks, []).append(c)
    ncpu = os.cpu_count() or 1
    total = sum(len([c for c in configs if not (c.name == "mpich" and c.ranks > ncpu
                                               and r >= a.oversubscribed_mpich_rounds)])
                for r in range(a.rounds))
    done = 0
    # Runs that may fail by their library's fault and did: not run again in later rounds
    # (the result would be the same, and the NOTE says why once).
    failed_once: set[tuple[str, int]] = set()
    for r in range(a.rounds):
        for n in sorted(by_ranks):
            group = by_ranks[n]
            if n > (os.cpu_count() or 1) and r >= a.oversubscribed_mpich_rounds:
                group = [c for c in group if c.name != "mpich"]
            order = group[r % len(group):] + group[:r % len(group)]
            for pos, cfg in enumerate(order):
                if (cfg.name, cfg.ranks) in failed_once:
                    total -= 1
                    continue
                done += 1
                res, run = run_once(a, cfg, f"[{done}/{total}, round {r + 1}] {cfg.name}, {n} ranks")
                c2c = run["c2c_ns"]
                got = C.parse_rows(res.stdout)
                meta = next((x for x in got if x.get("test") == "meta"), {})
                skips = [x for x in got if x.get("test") == "skip"]
                data = [x for x in got if x.get("test") in tests]
                for x in data:
                    x["lib"] = cfg.name
                    x["round"] = r
                    x["c2c_ns"] = c2c
                    x["noise"] = run["noise"]
                    x.setdefault("variant", "")
                run.update({"round": r, "position": pos, "rows": len(data), "meta": meta, "skips": skips})
                if not res.ok:
                    failures.append((cfg, res))
                    if cfg.may_fail:
                        failed_once.add((cfg.name, cfg.ranks))
                runs.append(run)
                rows += data
                C.log(f"    {len(data)} rows in {res.seconds:.1f} s (c2c {c2c} ns, cpu ratio "
                      f"{run['cpu_ratio_before']}/{run['cpu_ratio_after']}, foreign CPU "
                      f"{run['foreign_pct']}%, steal {run['steal_pct']}%)")
    return rows, runs, failures


def run_once(a, cfg: Config, label: str):
    """One run of cfg, between two probes of the CPUs' state, repeated (up to --retries)
    while other processes disturbed it or the vCPUs changed state, under the noise a.noise_kind
    (bench/noise.py; "none" when unset, as for groups.py). (result, run record)."""
    kind = getattr(a, "noise_kind", "none")
    for attempt in range(a.retries + 1):
        idle, waited = C.wait_for_idle(a.wait_idle) if a.wait_idle > 0 else (None, 0.0)
        probe = C.cpu_probe if getattr(a, "probe", True) else dict  # a driver's smoke run may skip it
        p0 = probe()
        c2c0 = p0.get("oneway_ns")
        C.log(f"{label} ..." + ("" if idle is not False else f" (machine still busy after {waited:.0f} s)"))
        # The noise stops (and is waited for) inside the meter: its CPU is ours.
        with C.SeparatorFile() as sep, C.CpuMeter() as meter, N.Running(kind, getattr(a, "noise_tool", None), cfg.ranks) as noise:
            res = C.run(N.wrap(kind, sep.put_in(cfg.cmd), cfg.ranks), env=cfg.env, timeout=a.timeout, cwd=C.REPO)
        st = meter.result
        p1 = probe()
        c2c1 = p1.get("oneway_ns")
        disturbed = st["foreign_pct"] > C.DISTURBED_PCT
        unstable = bool(c2c0 and c2c1 and not C.same_state(c2c0, c2c1))
        if not (disturbed or unstable) or not res.ok or attempt == a.retries:
            break
        C.log_again(disturbed, st["foreign_pct"], c2c0, c2c1)
    run = {"lib": cfg.name, "ranks": cfg.ranks, "noise": kind, "noise_report": noise.report, "rc": res.rc, "timed_out": res.timed_out,
           "seconds": round(res.seconds, 2), "c2c_ns": C.c2c_mean(c2c0, c2c1), "c2c_before_ns": c2c0,
           "c2c_after_ns": c2c1, "cpu_ratio_before": p0.get("cpu_ratio"), "cpu_ratio_after": p1.get("cpu_ratio"),
           "attempts": attempt + 1, "idle_wait_s": round(waited, 1), "disturbed": disturbed,
           "unstable": unstable, **st}
    if not res.ok:
        run["stderr_tail"] = res.stderr.strip().splitlines()[-30:]
        if cfg.may_fail:
            C.log(f"    {cfg.name} ({cfg.ranks} ranks) failed, as this library may (a NOTE gives the reason): "
                  f"{res.describe(0)}; not run again in later rounds")
        else:
            C.warn(f"{cfg.name} ({cfg.ranks} ranks) failed: {res.describe(30)}")
    elif res.stderr.strip():
        run["stderr_tail"] = res.stderr.strip().splitlines()[-10:]
    return res, run


# ---------------------------------------------------------------------------------------
# aggregation

def select_runs(runs, all_states: bool):
    """(lib, ranks, round) of the runs the summary uses, and a note: per rank count, the rounds
    in which every library's run was clean, for every library (see common.select_clean)."""
    if all_states:
        return {(r["lib"], r["ranks"], r["round"]) for r in runs}, "summary over all runs"
    keep, shared, own, fallback = C.select_clean(runs, lambda r: (r["ranks"],))
    return keep, C.clean_note(runs, keep, shared, own, fallback, lambda g: f"{g[0]} ranks")


def summarize(rows, keep):
    """key (ranks, coll, bytes, lib, setting) -> {median_us, rounds, min/max over rounds}.
    setting: goal algorithm (AUTO, RING, ...) or MPI variant (blocking, ...)."""
    per: dict = {}
    for x in rows:
        if (x["lib"], x["ranks"], x["round"]) not in keep or x.get("verified") is False:
            continue
        setting = x["variant"] or x["alg"]
        # With --touch: the time until the application has read its result.
        us = x["median_us"] + x.get("touch_us", 0.0)
        per.setdefault((x["ranks"], x["coll"], x["bytes"], x["lib"], setting), []).append((us, x.get("cycle_us")))
    out = {}
    for k, v in per.items():
        us = [u for u, _ in v]
        cycles = [c for _, c in v if C.isnum(c)]
        out[k] = {"median_us": C.median(us), "rounds": len(us), "min_round_us": min(us), "max_round_us": max(us),
                  "cycle_us": C.median(cycles) if cycles else None}
    return out


def points(summary, ranks):
    return sorted({(k[1], k[2]) for k in summary if k[0] == ranks}, key=lambda p: (COLLS.index(p[0]), p[1]))


def value(summary, ranks, coll, nbytes, lib, setting):
    s = summary.get((ranks, coll, nbytes, lib, setting))
    return s["median_us"] if s else float("nan")


# A reference whose loop (rank 0's wall time per iteration, the separator included: the JSON's
# cycle_us) took more than this many times goal AUTO's does not stand as the best setting of a
# collective timed from the separator (bcast, gather, scatter, reduce): its per-rank median left
# out where its time went. With more ranks than cores, a library whose waiting ranks keep their
# CPU loses it inside the separator, outside every rank's own timing: MPICH's gather of 8 B,
# 4 ranks on 2 CPUs, median 0.5-0.9 us per rank against goal's 0.9-1.1, took 466-488 us per
# iteration against goal's 4.5-4.7 (mean per rank 63-73 us against 1.2-1.3;
# docs/measurements/cycle-4ranks-2026-12-04/).
CYCLE_BOUND = 2.0


def best_of(summary, ranks, coll, nbytes, libs, settings=None, max_cycle=None, key="median_us"):
    """(value, lib, setting) of the fastest among libs (and settings); with `max_cycle`, of
    those whose loop took at most that many us per iteration (see CYCLE_BOUND). `key`
    "cycle_us": the fastest loop instead, among the settings that report one."""
    best = (float("nan"), None, None)
    for (rk, c, b, lib, st), s in summary.items():
        if rk != ranks or c != coll or b != nbytes or lib not in libs:
            continue
        if settings is not None and st not in settings:
            continue
        if max_cycle is not None and C.isnum(s.get("cycle_us")) and s["cycle_us"] > max_cycle:
            continue
        if C.isnum(s.get(key)) and (not C.isnum(best[0]) or s[key] < best[0]):
            best = (s[key], lib, st)
    return best


def targets_for(ranks, coll, nbytes, modes=False, auto_is=None):
    """[(relation, bound, against, text)] of the figures of merit at this point: against "mpi"
    (the best MPI setting), "ompi" (Open MPI's), "mode" (goal's fastest progress mode among the
    --goal-progress runs, with `modes`), or an absolute bound ("abs"). With more ranks than
    this machine's CPUs, issue 43's: the bounds of 2 ranks, and AUTO within 1.1x of goal's
    best mode."""
    ncpu = os.cpu_count() or 1
    out = []
    if ranks == 2:
        if nbytes == 8 or (coll == "barrier" and nbytes == 0):
            out.append(("<=", 1.2, "mpi", "2 ranks, 8 B: goal AUTO within 1.2x of the best MPI setting"))
        elif nbytes >= 64 * KiB:
            out.append(("<=", 1.0, "mpi", "2 ranks, 64 KiB and up: goal AUTO no slower than the best MPI setting"))
    elif ranks > ncpu:
        on = f"{ranks} ranks on {ncpu} CPUs"
        if coll == "barrier" or nbytes == 8:
            out.append(("<=", 1.2, "mpi", f"{on}, barrier and 8 B: goal AUTO within 1.2x of the best MPI setting"))
        elif nbytes >= 64 * KiB:
            out.append(("<=", 1.0, "mpi", f"{on}, 64 KiB and up: goal AUTO no slower than the best MPI setting"))
        if modes:
            other = f" other than {auto_is}, which AUTO is here" if auto_is else ""
            out.append(("<=", 1.1, "mode", f"{on}: goal AUTO within 1.1x of goal's fastest progress mode{other}"))
        if nbytes <= 64 * KiB:
            out.append(("abs", 1000.0, "", f"{on}, up to 64 KiB: goal AUTO below 1 ms (never the "
                        "milliseconds MPICH stalls for)"))
    elif ranks > 2:
        if coll == "barrier" or nbytes == 8:
            out.append(("<=", 2.0, "ompi", f"{ranks} ranks, barrier and 8 B: goal AUTO within 2x of the best "
                        "Open MPI setting (microseconds, like Open MPI)"))
        if nbytes <= 64 * KiB:
            out.append(("abs", 1000.0, "", f"{ranks} ranks, up to 64 KiB: goal AUTO below 1 ms (never the "
                        "milliseconds MPICH stalls for)"))
    return out


def auto_modes(a, configs: list[Config]) -> dict:
    """{ranks: the GOAL_PROGRESS mode goal's AUTO resolves to there}, read from its GOAL_DEBUG
    line in one barrier run per rank count (under the run's noise condition, which can change
    the answer), for the rank counts whose AUTO is judged against goal's progress modes."""
    out = {}
    ncpu = os.cpu_count() or 1
    for n in a.ranks:
        g = next((c for c in configs if c.name == "goal" and c.ranks == n), None)
        if g is None or n <= ncpu:
            continue
        probe = narrowed(g, "barrier", 0, "AUTO")
        probe = Config(probe.name, probe.kind, probe.ranks, probe.cmd, {**probe.env, "GOAL_DEBUG": "1"}, probe.note)
        res, _ = run_once(a, probe, f"[AUTO's progress mode, {n} ranks] goal")
        m = re.search(r"progress=(\w+)", res.stderr or "")
        if m:
            out[n] = m.group(1)
    return out


def cycle_cap(summary, ranks, coll, nbytes, goal_lib="goal"):
    """The most us per iteration a reference's loop may take to stand as the best setting at
    this point (CYCLE_BOUND times goal AUTO's), or None: for the collectives timed from the
    separator, when goal's cycle was measured."""
    if coll not in ("bcast", "gather", "scatter", "reduce"):
        return None
    g = summary.get((ranks, coll, nbytes, goal_lib, "AUTO"), {}).get("cycle_us")
    return CYCLE_BOUND * g if C.isnum(g) else None


def evaluate(summary, ranks_list, goal_lib="goal", auto_is=None):
    """The targets at every point. `auto_is` ({ranks: mode}, from auto_modes): where AUTO resolved
    to a mode that also ran as its own variant, the two are one configuration, and AUTO is judged
    against the other modes only (measured against itself, AUTO only compared two samples of
    one distribution: 4 ranks on 2 CPUs, bcast 8 B, AUTO/thread paired 0.56-1.85)."""
    res = []
    all_modes = sorted({k[3] for k in summary if k[3] in MODE_LIBS})
    for n in ranks_list:
        resolved = (auto_is or {}).get(n)
        if f"goal-{resolved}" not in all_modes:
            resolved = None  # AUTO's mode did not run as a variant of its own
        modes = [m for m in all_modes if m != f"goal-{resolved}"]
        for coll, nb in points(summary, n):
            g = value(summary, n, coll, nb, goal_lib, "AUTO")
            if not C.isnum(g):
                continue
            for rel, bound, against, text in targets_for(n, coll, nb, modes=bool(modes), auto_is=resolved):
                if rel == "abs":
                    v, ok, ref = g, g < bound, None
                else:
                    libs = {"mpi": MPI_LIBS, "ompi": OMPI_LIBS, "mode": modes}[against]
                    settings = {"AUTO"} if against == "mode" else None
                    cap = cycle_cap(summary, n, coll, nb, goal_lib)
                    ref, rlib, rset = best_of(summary, n, coll, nb, libs, settings, cap)
                    uncapped = best_of(summary, n, coll, nb, libs, settings)
                    if cap is not None and uncapped[1] is not None and uncapped[1:] != (rlib, rset):
                        us = summary[(n, coll, nb, uncapped[1], uncapped[2])]
                        left_out = {"lib": uncapped[1], "setting": uncapped[2], "median_us": uncapped[0],
                                    "cycle_us": us["cycle_us"], "goal_cycle_us": cap / CYCLE_BOUND}
                    else:
                        left_out = None
                    by_loop = not C.isnum(ref) and left_out is not None
                    if by_loop:
                        # Every setting was left out for its loop: the loops decide.
                        ref, rlib, rset = best_of(summary, n, coll, nb, libs, settings, key="cycle_us")
                        g_at = left_out["goal_cycle_us"]
                    else:
                        g_at = g
                    if not C.isnum(ref):
                        continue
                    v = g_at / ref
                    ok = v <= bound
                t = {"ranks": n, "coll": coll, "bytes": nb, "target": text, "relation": rel, "against": against,
                     "bound": bound, "value": v, "goal_us": g_at if rel != "abs" else g, "ref_us": ref, "ok": ok}
                if rel != "abs" and by_loop:
                    t["by_loop"] = True
                if rel != "abs":
                    t["ref_lib"], t["ref_setting"] = rlib, rset
                    if left_out:
                        t["left_out"] = left_out
                # How far the rounds spread: a ratio near the bound whose rounds overlap says less
                # than its median.
                gs = summary[(n, coll, nb, goal_lib, "AUTO")]
                t["goal_rounds_us"] = [gs["min_round_us"], gs["max_round_us"]]
                if rel != "abs":
                    rs = summary[(n, coll, nb, rlib, rset)]
                    t["ref_rounds_us"] = [rs["min_round_us"], rs["max_round_us"]]
                res.append(t)
    return res


# ---------------------------------------------------------------------------------------
# paired re-measurement of close calls

def narrowed(cfg: Config, coll: str, nbytes: int, setting: str) -> Config:
    """cfg's command cut down to one point: `coll` at `nbytes`, goal's AUTO or one MPI variant."""
    cmd, skip = [], False
    for x in cfg.cmd:
        if skip:
            skip = False
        elif x in ("--colls", "--sizes", "--algs", "--variants"):
            skip = True
        elif x != "--gather-extra":
            cmd.append(x)
    cmd += ["--colls", coll, "--sizes", str(nbytes or 8)]
    cmd += ["--algs", "auto"] if cfg.kind == "goal" else ["--variants", setting]
    return Config(cfg.name, cfg.kind, cfg.ranks, cmd, cfg.env, cfg.note)


def is_close(t) -> bool:
    """A ratio target whose verdict the rounds cannot be trusted with: goal within 5 % of the
    bound, or past it."""
    return t["relation"] != "abs" and not t.get("by_loop") and C.isnum(t["value"]) and t["value"] > 0.95 * t["bound"]


def duel(a, configs: list[Config], t: dict, pairs: int) -> list[dict]:
    """Measures goal's AUTO and the reference of target t (the best MPI setting, or goal's
    fastest progress mode) again, in `pairs` pairs of back-to-back runs of that one point (goal
    first in every other pair), and gives t the pairs' verdict: the median over pairs of
    goal/reference. The rounds pick the reference as the fastest of several noisy medians (up
    to nine MPI settings: three libraries x three variants), which favours it the closer they
    are; the pairs measure the one picked on fresh runs, and each pair's two runs share the
    machine's state. The run records."""
    n, coll, nb, setting = t["ranks"], t["coll"], t["bytes"], t["ref_setting"]
    g = next((c for c in configs if c.name == "goal" and c.ranks == n), None)
    m = next((c for c in configs if c.name == t["ref_lib"] and c.ranks == n), None)
    if g is None or m is None:
        return []
    both = (narrowed(g, coll, nb, "AUTO"), narrowed(m, coll, nb, setting))
    what = f"{n} ranks {coll}{' ' + C.fmt_bytes(nb) if nb else ''}"
    matches = lambda cfg, x: (x.get("test") == "coll" and x.get("coll") == coll and x.get("bytes") == nb  # noqa: E731
                              and (x.get("variant") or x.get("alg")) == ("AUTO" if cfg.kind == "goal" else setting))
    return run_pairs(a, t, both, what, setting_label(t["ref_lib"], setting), matches, pairs)


def run_pairs(a, t: dict, both: tuple, what: str, ref_label: str, matches, pairs: int,
              run_one=None, measure=None, higher_better: bool = False, unit: str = "us") -> list[dict]:
    """The pairs of a duel: `both` (goal's configuration and the reference's, each cut down to
    target t's point) run back to back `pairs` times, goal first in every other pair; a row of
    a run counts where `matches(cfg, row)`. Gives t the pairs' verdict, the median over the
    clean pairs of goal/reference, when most pairs were clean (else the rounds' verdict
    stands), and keeps the rounds' in t["rounds_verdict"]. A pair whose two runs saw the vCPUs
    in different states (C.same_state of their core-to-core probes) is not clean, and is run
    again, up to `pairs` extra times in all. The run records (bench/groups.py and
    bench/p2p.py decide their close calls with it too). A run is `run_one(cfg, label)`, by
    default this driver's `run_once`; a row's figure is `measure(row)`, by default its median
    time in `unit` "us", and with `higher_better` (a bandwidth) the verdict is ratio >= bound."""
    run_one = run_one or (lambda cfg, label: run_once(a, cfg, label))
    measure = measure or (lambda x: x["median_us"] + x.get("touch_us", 0.0))
    runs, got, mixed = [], [], 0
    i = 0
    while len(got) < pairs and i < pairs + mixed and mixed <= pairs:
        us, c2c = {}, {}
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            cfg = both[k]
            res, run = run_one(cfg, f"[paired {what}, {i + 1}/{pairs}] {cfg.name}")
            rows = [x for x in C.parse_rows(res.stdout) if matches(cfg, x)]
            run.update({"duel": what, "pair": i, "rows": len(rows)})
            runs.append(run)
            c2c[k] = run.get("c2c_ns")
            if res.ok and rows and rows[0].get("verified") is not False and not (run["disturbed"] or run["unstable"]):
                us[k] = measure(rows[0])
        i += 1
        if len(us) == 2 and not C.same_state(c2c[0], c2c[1]):
            mixed += 1
            C.log(f"    the vCPUs changed state between the pair's runs ({c2c[0]} / {c2c[1]} ns core to core); again")
            continue
        if len(us) == 2:
            got.append((us[0], us[1]))
    gk, rk = f"goal_{unit}", f"ref_{unit}"
    t["rounds_verdict"] = {"value": t["value"], gk: t.get(gk), rk: t.get(rk), "ok": t["ok"]}
    ratios = [x / y for x, y in got]
    t["paired"] = {"pairs": [{gk: x, rk: y, "ratio": x / y} for x, y in got],
                   "asked": pairs, "mixed_states": mixed,
                   "goal_faster": sum(1 for r in ratios if (r > 1.0 if higher_better else r < 1.0))}
    if len(got) * 2 > pairs:  # a verdict from most of the pairs, or the rounds' stands
        t["value"] = C.median(ratios)
        t[gk], t[rk] = C.median(x for x, _ in got), C.median(y for _, y in got)
        t["ok"] = t["value"] >= t["bound"] if higher_better else t["value"] <= t["bound"]
        t["paired"]["decides"] = True
    else:
        t["paired"]["decides"] = False
    C.log(f"    paired {what}: goal/{ref_label} "
          + " ".join(f"{r:.3f}" for r in ratios) + f" -> median {C.fmt_num(C.median(ratios), 3) if ratios else '-'}"
          + ("" if t["paired"]["decides"] else " (too few clean pairs: the rounds' verdict stands)"))
    return runs


# ---------------------------------------------------------------------------------------
# report

VAR_SHORT = {"blocking": "b", "nonblocking": "nb", "persistent": "p"}


def setting_label(lib, st):
    short = {"openmpi": "ompi", "openmpi-nosc": "ompi-nosc", "mpich": "mpich"}.get(lib, lib)
    return f"{short}:{VAR_SHORT.get(st, st)}"


def report(summary, ranks_list, targets, libs) -> str:
    out = []
    mpis = [l for l in MPI_LIBS if l in libs]
    peers = mpis + [l for l in OTHER_PEERS if l in libs]
    goal_extra = [l for l in libs if l.startswith("goal") and l != "goal"]
    for n in ranks_list:
        pts = points(summary, n)
        if not pts:
            continue
        ncpu = os.cpu_count() or 1
        over = f" - {n} ranks on {ncpu} CPUs: more ranks than cores, ranks share CPUs" if n > ncpu else ""
        out.append(f"{n} ranks{over}")
        out.append("times in us, median over rounds of each run's median; MPI columns: the best of that "
                   "library's variants (b = blocking, nb = MPI_Ixxx+Wait, p = persistent Start+Wait)")
        hdr = ["collective", "bytes", "goal AUTO", "best goal alg"] + goal_extra + \
              [{"openmpi": "ompi", "openmpi-nosc": "ompi-nosc"}.get(m, m) for m in peers] + \
              ["best MPI", "AUTO/best", "target"]
        rows = []
        for coll, nb in pts:
            g = value(summary, n, coll, nb, "goal", "AUTO")
            ga, _, galg = best_of(summary, n, coll, nb, ["goal"], None)
            row = [coll, C.fmt_bytes(nb) if nb else "-", C.fmt_num(g),
                   f"{C.fmt_num(ga)} {galg.lower()}" if galg else "-"]
            row += [C.fmt_num(value(summary, n, coll, nb, gl, "AUTO")) for gl in goal_extra]
            for m in peers:
                v, _, st = best_of(summary, n, coll, nb, [m])
                row.append(f"{C.fmt_num(v)} {VAR_SHORT.get(st, '')}" if st else "-")
            bv, bl, bs = best_of(summary, n, coll, nb, mpis, None, cycle_cap(summary, n, coll, nb))
            if bl:
                row.append(f"{C.fmt_num(bv)} {setting_label(bl, bs)}")
            else:
                row.append("loops >2x" if C.isnum(best_of(summary, n, coll, nb, mpis)[0]) else "-")
            row.append(C.fmt_num(g / bv, 2) if C.isnum(g) and C.isnum(bv) and bv > 0 else "-")
            marks = []
            for t in targets:
                if (t["ranks"], t["coll"], t["bytes"]) == (n, coll, nb):
                    m = "ok" if t["ok"] else "MISS"
                    if t.get("paired", {}).get("decides"):
                        m += f" (paired {t['value']:.2f})"
                    mode = " mode" if t["against"] == "mode" else ""
                    if t.get("by_loop"):
                        m += f" (loop {t['value']:.2f})"
                    marks.append(f"<1ms {m}" if t["relation"] == "abs" else f"<={t['bound']:g}x{mode} {m}")
            ref = REFERENCE.get((coll, nb)) if n == 2 else None
            if ref:
                marks.append(f"(ref {ref:g})")
            row.append(", ".join(marks))
            rows.append(row)
        out.append(C.table(hdr, rows, "ll" + "r" * (len(hdr) - 3) + "l"))
        out.append("")
    return "\n".join(out)


def plot(summary, ranks_list, libs, path: Path, title: str, footnote: str) -> bool:
    plt = C.pyplot()
    if plt is None:
        return False
    import matplotlib.ticker as mt
    ranks_list = [n for n in ranks_list if points(summary, n)]
    if not ranks_list:
        return False
    mpis = [l for l in MPI_LIBS + OTHER_PEERS if l in libs]
    goal_extra = [l for l in libs if l.startswith("goal") and l != "goal"]
    alg_colors = ["#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f"]
    rows = -(-len(COLLS) // 3)  # per group size: the collectives, three a row
    nr = rows * len(ranks_list)
    fig, axes = plt.subplots(nr, 3, figsize=(16, 4.6 * nr), constrained_layout=True)
    for ri, n in enumerate(ranks_list):
        for ci in range(len(COLLS), 3 * rows):
            axes[rows * ri + ci // 3][ci % 3].set_visible(False)
        for ci, coll in enumerate(COLLS):
            ax = axes[rows * ri + ci // 3][ci % 3]
            sizes = sorted({nb for (c, nb) in points(summary, n) if c == coll})
            if not sizes:
                ax.set_visible(False)
                continue
            algs = sorted({k[4] for k in summary if k[0] == n and k[1] == coll and k[3] == "goal"} - {"AUTO"})
            series = [("goal", "AUTO", "goal AUTO", dict(C.style("goal"), linewidth=2.6, markersize=6))]
            for i, alg in enumerate(algs):
                series.append(("goal", alg, f"goal {alg.lower().replace('_', ' ')}",
                               dict(color=alg_colors[i % len(alg_colors)], marker=".", linestyle="--",
                                    linewidth=1.0, markersize=5)))
            for i, gl in enumerate(goal_extra):
                series.append((gl, "AUTO", f"{gl} AUTO", dict(C.style(gl), color=["#ff7f0e", "#17a589", "#7d3c98"][i % 3],
                                                             linewidth=1.4)))
            for m in mpis:
                series.append((m, None, f"{m} (best variant)", dict(C.style(m), linewidth=1.6, markersize=5)))
            if coll == "barrier":
                labels, vals, colors = [], [], []
                for lib, st, label, sty in series:
                    v = (best_of(summary, n, coll, 0, [lib])[0] if st is None
                         else value(summary, n, coll, 0, lib, st))
                    if C.isnum(v):
                        labels.append(label)
                        vals.append(v)
                        colors.append(sty.get("color", "grey"))
                C.log_bars(ax, labels, vals, colors, f"barrier, {n} ranks")
                continue
            for lib, st, label, sty in series:
                xs, ys = [], []
                for nb in sizes:
                    v = (best_of(summary, n, coll, nb, [lib])[0] if st is None
                         else value(summary, n, coll, nb, lib, st))
                    if C.isnum(v):
                        xs.append(nb)
                        ys.append(v)
                if xs:
                    ax.plot(xs, ys, label=label, **sty)
            C.bytes_axis(ax, sizes, min_step=8)
            ax.set_xlabel("bytes per rank" if coll != "bcast" else "message [bytes]")
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_ylabel("time [µs]")
            ax.set_title(f"{coll}, {n} ranks", fontsize=11)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=13)
    fig.text(0.5, -0.003, footnote, ha="center", va="top", fontsize=8, wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------

def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    out = Path(a.out)
    if not out.is_absolute():
        out = Path.cwd() / out
    if out.suffix in (".json", ".png"):
        out = out.with_suffix("")
    machine = C.machine_info()
    if machine["loadavg_start"] and machine["loadavg_start"][0] > 0.5:
        C.warn(f"load average is {machine['loadavg_start'][0]:.2f} before starting: something else is "
               f"running ({', '.join(C.busy_processes()) or 'see top'}); results will be noisy")
    ncpu = machine["nproc"] or 1
    for n in a.ranks:
        if n > ncpu:
            C.log(f"NOTE: {n} ranks on {ncpu} CPUs: more ranks than cores; ranks share CPUs "
                  "(Open MPI gets --oversubscribe)")

    configs, libinfo = build_and_configure(a)
    kinds = N.kinds(a)
    C.log(f"configurations: {', '.join(f'{c.name}/{c.ranks}' for c in configs)}; {a.rounds} round(s)"
          + (f"; under each of: {', '.join(kinds)}" if kinds != ["none"] else ""))
    a.noise_tool = N.goal_tool(a.prefix)
    results, rc = {}, 0
    for kind in kinds:
        a.noise_kind = kind
        results[kind], code = condition(a, configs, libinfo, machine, out)
        rc = max(rc, code)
    N.write(out, "coll", a, machine, results)
    return rc


def condition(a, configs, libinfo, machine, out: Path) -> tuple[dict, int]:
    """The whole measurement under the noise a.noise_kind: runs, close calls, summary, report,
    plot; returns the condition's result (the JSON, or its part for this kind) and the exit
    status."""
    kind, ncpu = a.noise_kind, machine["nproc"] or 1
    libs = list(dict.fromkeys(c.name for c in configs))
    if kind != "none":
        print(f"\n=== noise: {kind} ===")
    t0 = time.time()
    rows, runs, failures = run_all(a, configs)

    for run in runs:
        meta = run.get("meta") or {}
        info = libinfo.setdefault(run["lib"], {})
        for k in ("version", "persistent", "mpi_version", "progress"):
            if meta.get(k) not in (None, ""):
                info[k] = " ".join(str(meta[k]).split()) if isinstance(meta[k], str) else meta[k]
        for s in run.get("skips") or []:
            info.setdefault("skipped", []).append(f"{s.get('variant')}: {s.get('why')}")
    for c in configs:
        info = libinfo.setdefault(c.name, {})
        info.setdefault("commands", {})[str(c.ranks)] = c.cmd
        info.update(env=c.env, note=c.note, kind=c.kind)
        if "skipped" in info:
            info["skipped"] = sorted(set(info["skipped"]))

    keep, state_note = select_runs(runs, a.all_states)
    summary = summarize(rows, keep)
    auto_is = auto_modes(a, configs) if a.goal_progress.strip() not in ("", "none") and not a.no_goal else {}
    targets = evaluate(summary, a.ranks, auto_is=auto_is)
    close = [t for t in targets if is_close(t)] if a.pairs > 0 and not a.no_goal else []
    if close:
        C.log(f"{len(close)} close call(s): measuring each again in {a.pairs} pairs of runs")
    paired_runs = []
    for t in close:
        paired_runs += duel(a, configs, t, a.pairs)
    elapsed = time.time() - t0
    text = report(summary, a.ranks, targets, libs)
    notes = [state_note] if state_note else []
    if a.touch:
        notes.append("--touch: each value is Run+Wait's median plus the median time every rank then took to "
                     "read its result (the largest over ranks): not the thesis' method, whose loop never "
                     "reads what the collectives leave")
    c2cs = [r["c2c_ns"] for r in runs if C.isnum(r.get("c2c_ns"))]
    dist = [f"{r['lib']}/{r['ranks']}#{r['round'] + 1} ({r['foreign_pct']}%)" for r in runs if r.get("disturbed")]
    if dist:
        notes.append(f"{len(dist)} of {len(runs)} runs shared the CPUs with other processes even after "
                     f"retries: {', '.join(dist)}")
    if c2cs and not C.same_state(min(c2cs), max(c2cs)):
        notes.append(f"core-to-core latency changed between runs ({min(c2cs):.0f}..{max(c2cs):.0f} ns): "
                     "the host moved the vCPUs; the summary prefers runs in the fast state")
    for n, m in sorted(auto_is.items()):
        notes.append(f"{n} ranks: goal's AUTO resolved to GOAL_PROGRESS={m} (its GOAL_DEBUG line): AUTO and "
                     f"goal-{m} are one configuration, and AUTO's mode target compares it with the other modes")
    if (n := C.cpu_ratio_note(runs)):
        notes.append(n)
    if (n := N.condition_note(kind, runs)):
        notes.append(n)
    for lib, info in libinfo.items():
        for s in info.get("skipped", []):
            notes.append(f"{lib}: skipped {s}")
    wrong = sorted({(x["lib"], x["ranks"], x["variant"] or x["alg"], x["coll"], x["bytes"]) for x in rows
                    if x.get("verified") is False})
    if wrong:
        notes.append(f"{len(wrong)} points gave WRONG RESULTS in the verification run and are left out of the "
                     "summary: " + "; ".join(f"{l}/{n} {st} {c} {b} B" for l, n, st, c, b in wrong[:20])
                     + (" ..." if len(wrong) > 20 else ""))
    goal_wrong = [w for w in wrong if w[0].startswith("goal")]
    for lib in ("openmpi", "mpich"):
        if lib in libinfo and libinfo[lib].get("persistent"):
            notes.append(f"{lib} persistent collectives: {libinfo[lib]['persistent']}")
    machine["loadavg_end"] = C.loadavg()

    print()
    print(text)
    binding = "none (no pinning)" if a.no_pin else "rank r pinned to CPU r % ncpus by the program (launcher binding off)"
    if kind == "oversub":
        binding = ("launcher binding off, no pinning, each job on half as many CPUs as ranks: "
                   + "; ".join(f"{n} ranks on CPUs {N.oversub_cpus(n)}" for n in a.ranks) + " (--noise oversub)")
    print(f"machine: {machine['hostname']}, {ncpu} CPUs ({machine['cpu_model']}), kernel {machine['kernel']}; "
          f"binding: {binding}")
    if c2cs:
        print(f"core-to-core one-way latency (cache line, CPU 0<->1): {C.median(c2cs):.1f} ns median "
              f"({min(c2cs):.1f}..{max(c2cs):.1f})")
    for lib in libs:
        v = libinfo.get(lib, {}).get("version")
        if v:
            print(f"{lib}: {C.short_version(v)}")
    for nt in notes:
        print(f"NOTE: {nt}")
    if targets:
        met = sum(1 for t in targets if t["ok"])
        paired = [t for t in targets if t.get("paired", {}).get("decides")]
        print(f"targets: {met}/{len(targets)} met" + (f" ({len(paired)} close call(s) decided by {a.pairs} "
              "pairs of runs of goal and the reference, below)" if paired else ""))
        for t in paired:
            rv = t["rounds_verdict"]
            print(f"  paired  {t['ranks']} ranks {t['coll']} {C.fmt_bytes(t['bytes']) if t['bytes'] else ''}: "
                  f"{C.fmt_num(t['value'], 3)}x (goal faster in {t['paired']['goal_faster']} of "
                  f"{len(t['paired']['pairs'])} pairs; vs {setting_label(t['ref_lib'], t['ref_setting'])}), "
                  f"{'ok' if t['ok'] else 'MISS'}; the rounds said {C.fmt_num(rv['value'], 3)}x, "
                  f"{'ok' if rv['ok'] else 'MISS'}")
        for t in targets:
            lo = t.get("left_out")
            if lo:
                print(f"  loop    {t['ranks']} ranks {t['coll']} {C.fmt_bytes(t['bytes']) if t['bytes'] else ''}: "
                      f"{setting_label(lo['lib'], lo['setting'])} left out of the best (median "
                      f"{C.fmt_num(lo['median_us'])} us, but {C.fmt_num(lo['cycle_us'])} us per iteration of its "
                      f"loop against goal's {C.fmt_num(lo['goal_cycle_us'])}: more than {CYCLE_BOUND:g}x)")
        for t in targets:
            if not t["ok"]:
                what = (f"{C.fmt_num(t['value'])} us" if t["relation"] == "abs"
                        else f"{C.fmt_num(t['value'], 2)}x: goal {C.fmt_num(t['goal_us'])} us vs {C.fmt_num(t['ref_us'])} us")
                spread = lambda r: f"{C.fmt_num(r[0])}..{C.fmt_num(r[1])}"  # noqa: E731
                if "ref_rounds_us" in t and not t.get("paired", {}).get("decides"):
                    what += (f" (rounds: goal {spread(t['goal_rounds_us'])}, "
                             f"best MPI {spread(t['ref_rounds_us'])})")
                print(f"  MISSED  {t['ranks']} ranks {t['coll']} {C.fmt_bytes(t['bytes']) if t['bytes'] else ''}: {what}")
    print(f"{len(runs)} runs" + (f" and {len(paired_runs)} paired runs" if paired_runs else "") + f" in {elapsed:.0f} s")

    result = {
        "benchmark": "coll",
        "noise": kind,
        "method": "thesis 6.5: per-iteration time of Run+Wait (MPI: call / Ixxx+Wait / Start+Wait) on every "
                  "rank, barrier before each iteration of bcast/gather/scatter/reduce, mean over ranks per "
                  "iteration, median over iterations; summary: median over rounds; ratio targets within 5 % of "
                  "their bound or missed: median goal/MPI over pairs of back-to-back runs of that point"
                  + ("; --touch: plus touch_us, each rank's read of its result after every iteration (median, "
                     "largest over ranks)" if a.touch else ""),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "machine": machine,
        "binding": binding,
        "libraries": libinfo,
        "targets": targets,
        "auto_progress": {str(n): m for n, m in auto_is.items()},
        "reference_us": [{"coll": c, "bytes": b, "us": v} for (c, b), v in REFERENCE.items()],
        "summary": [{"ranks": k[0], "coll": k[1], "bytes": k[2], "lib": k[3], "setting": k[4], **v}
                    for k, v in sorted(summary.items(), key=lambda kv: (kv[0][0], COLLS.index(kv[0][1]),
                                                                        kv[0][2], kv[0][3], kv[0][4]))],
        "runs": runs,
        "paired_runs": paired_runs,
        "rows": rows,
        "notes": notes,
        "table": text,
    }
    title = (f"goal collectives vs MPI — {machine['hostname']}, {ncpu} CPUs, {time.strftime('%Y-%m-%d')}, "
             f"median of {a.rounds} round(s)" + (" [quick]" if a.quick else "") + (", results read (--touch)" if a.touch else "")
             + (f", noise: {kind}" if kind != "none" else ""))
    foot = ("Thesis 6.5 method: Run+Wait per iteration on every rank, mean over ranks, median over iterations; "
            "barrier before bcast/gather/scatter/reduce iterations"
            + (", plus each rank's read of its result after every iteration (--touch)" if a.touch else "")
            + ". MPI lines: best of blocking, non-blocking and persistent. " + "; ".join(f"{n} ranks on {ncpu} CPUs (oversubscribed)" for n in a.ranks if n > ncpu)
            + ". " + "; ".join(dict.fromkeys(C.short_version(libinfo[l]["version"]) for l in libs
                                              if libinfo.get(l, {}).get("version"))))
    png = Path(f"{out}{N.suffix(kind)}.png")
    if plot(summary, a.ranks, libs, png, title, foot):
        print(f"wrote {png}")
    rc = 0
    if goal_wrong:
        print(f"ERROR: goal gave wrong results at {len(goal_wrong)} point(s): "
              + "; ".join(f"{l}/{n} {st} {c} {b} B" for l, n, st, c, b in goal_wrong[:10]), file=sys.stderr)
        rc = 1
    goal_fail = [(c, r) for c, r in failures if c.kind == "goal"]
    if goal_fail:
        print(f"ERROR: goal failed in {len(goal_fail)} run(s):", file=sys.stderr)
        for c, r in goal_fail[:3]:
            print(f"  {c.name} ({c.ranks} ranks): {r.describe()}", file=sys.stderr)
        rc = 1
    if a.strict and any(not t["ok"] for t in targets):
        rc = 1
    return result, rc


if __name__ == "__main__":
    sys.exit(main())
