#!/usr/bin/env python3
"""Unmodified MPI programs, natively and with libgoal-mpi preloaded (issue 41's measurement).

    goal bench mpi [--out results/mpi]            # full run (root: locally and across 2 emulated hosts)
    goal bench mpi --quick                        # smoke run (a minute or two), what `make bench-mpi-check` runs
    python3 bench/mpi_report.py results/mpi.json  # the tables again; --check: the JSON's shape

The same executables, built with each MPI's own mpicc and linked against nothing of goal's, run
under that MPI's launcher twice: natively ("openmpi", "mpich") and with the layer preloaded
("openmpi+goal": mpirun -x LD_PRELOAD=PREFIX/lib/libgoal-mpi-openmpi.so; "mpich+goal": mpiexec
-genv LD_PRELOAD PREFIX/lib/libgoal-mpi-mpich.so), every run with GOAL_DEBUG=1 so that the layer's
report at MPI_Finalize (per function, calls on goal and calls that went to MPI, and why) is read
from the very runs that are timed. goal runs with its defaults (GOAL_PROGRESS=auto).

Programs:
  overlap.c   (bench/overlap.py's program, MPI build; its header has every formula) with
              --tests overlap,background on barrier, bcast 8 B / 64 KiB / 1 MiB, allreduce 8 B /
              64 KiB / 1 MiB (float32 sum): MPI_Ibarrier / MPI_Ibcast / MPI_Iallreduce, IMB-NBC's
              method: t_pure = start + MPI_Wait alone, t_cpu = the computation alone (max(t_pure,
              50 us)), t_ovrl = start; computation without any MPI call; MPI_Wait, overlap % =
              100 max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu))); background:
              start; 20 ms (quick 10 ms) of computation without MPI calls; one MPI_Test; MPI_Wait ->
              done % = how often the operation had finished during the computation (min over ranks).
  mpi_coll.c  (bench/coll.py's MPI program) with --variants blocking: MPI_Barrier, Bcast, Reduce,
              Allreduce, Allgather, Alltoall, Gather, Scatter, 8 B to 4 MiB per rank (the thesis'
              method, its header: median over iterations of the mean over ranks; results verified).
              The layer serves them on goal where its rule says goal is faster (docs/mpi.md,
              "Blocking collectives": a table per MPI within a host and one across hosts); there
              the ratio is goal's against MPI's, elsewhere (PMPI_ untouched) what loading the layer
              and running goal beside MPI (its idle helper thread) costs.

Setups: "local" = 2 ranks on this machine; "2x1" (root) = 2 emulated hosts x 1 rank, one rail at
1 Gbit/s (goal-cluster, network namespaces, tc), Open MPI (btl tcp,self, the layer's goal with
GOAL_RAILS=rail0) under goal-cluster's mpirun, MPICH under its hydra with UCX_TLS=self,tcp (UCX's
posix and sysv shared memory, which goal-cluster allows for ranks of one host, reach across the
emulated hosts: an 8 B allreduce took 1 us between them with it, 14 us over TCP). Across the
hosts the emulated network's own CPU cost is measured first (bench/overlap.py's net_cost: the
machine's busy time per MiB moved by plain sockets between the two hosts) and gives each point's
overlap ceiling (each point timed for about 2 s there, overlap.c's --budget-ms 2000: 45
repetitions of a 1 MiB operation, not 10), as docs/measurements/cluster-2026-11-26/ computed it:
    c = cost per MiB x MiB the operation moves in all / CPUs,  ceiling % = 100 (1 - c / t_pure)
(MiB moved between 2 ranks, the least any algorithm moves: bcast 1 x the size, allreduce 2 x).
Busy time misses what a computation loses to the interrupts' VM exits, and spreads the cost over
the CPUs where IMB's method takes the worst rank, so the 1 MiB points also get a ceiling measured
as a rank sees it (bench/netfloor.py: the time a busy loop on each rank's CPU loses while the least
a TCP user can do moves the operation's bytes, rank r's processes on CPU r):
    ceiling % = 100 (1 - the worst CPU's loss per operation / t_pure)
Where both exist the lower holds (both are bounds; the tighter one binds), and the table shows both.
Target (issue 41): across hosts, Iallreduce and Ibcast of 1 MiB with the layer reach 90 % overlap
or within 3 points of the ceiling where that is lower; Ibarrier finishes during the computation.
A reference is measured beside them in every round: bench/ref_progress.c, the same bcast and
allreduce points (from 64 KiB) moved between the two hosts by a plain progress thread (sockets,
poll and the receive low-water mark, no library), as an ordinary and as a real-time thread, timed
the same way: what any thread-based progress keeps here. It is shown, not part of the target.

Rounds: every configuration once per round, in rotating order; a run during which other processes
took >10 % of the CPUs is repeated (locally). Tables: medians over rounds; ratios (with the layer
/ native) are the median of each round's ratio. Pairs: a pure latency the rounds put above native
(ratio > 1) is measured again in --pairs back-to-back pairs (default 6; none with --quick), each
pair the native run and the run with the layer of that one operation, alone (overlap.c --tests
overlap, 0.5 s budget), first one then the other in turn; the median of the pairs' ratios decides
(marked "p" in the table); so is a blocking point the rounds put above 1.05: pairs of the
blocking program on those points alone, per setup and MPI. Rounds run every configuration apart
by minutes, and this VM moves
between two states of its network path (an 8-byte collective across the hosts takes about 8 or
12 us, for both MPIs and goal alike) from one to the next: a round's ratio then reads 0.7 or 1.5
for no difference of the libraries'. A served call that went to MPI, a run with the
layer whose layer did not start, or a wrong result fails the run loudly (exit status 1).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import mpi_report as R  # noqa: E402
import netfloor as F  # noqa: E402
import overlap as O  # noqa: E402

MPIS = ("openmpi", "mpich")
OVERLAP_OPS = "barrier,bcast:8,bcast:64K,bcast:1M,allreduce:8,allreduce:64K,allreduce:1M"
QUICK_OPS = "barrier,bcast:64K,allreduce:1M"
BLOCKING_COLLS = "barrier,bcast,reduce,allreduce,allgather,alltoall,gather,scatter"
BLOCKING_SIZES = "8,64,512,4096,32768,262144,1048576,4194304"
QUICK_SIZES = "8,65536"
# What overlap.c calls that the layer serves: each must run on goal, never go to MPI.
SERVED = ("MPI_Ibarrier", "MPI_Ibcast", "MPI_Iallreduce")
REPORT_RE = re.compile(r"goal-mpi \(rank (\d+)\): (MPI_\w+): (\d+) on goal, (\d+) to MPI")
WHY_RE = re.compile(r"goal-mpi \(rank (\d+)\):\s+(\d+): (.+)")
SCHED_RE = re.compile(r"goal-mpi \(rank (\d+)\): schedules: (\d+) compiled, (\d+) reused")
STARTED = "goal-mpi: goal runs the non-blocking collectives"


@dataclass
class Config:
    setup: str
    lib: str          # openmpi, openmpi+goal, mpich, mpich+goal
    program: str      # overlap, blocking
    cmd: list[str]
    env: dict = field(default_factory=dict)
    served: tuple = SERVED  # what an overlap run with the layer must have run on goal


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--prefix", type=Path, required=True, help="goal install prefix (make install PREFIX=DIR): "
                    "its lib/libgoal-mpi-openmpi.so and lib/libgoal-mpi-mpich.so")
    ap.add_argument("--out", default=str(C.REPO / "results" / "mpi"),
                    help="output path without extension (default results/mpi): .json and _*.png")
    ap.add_argument("--quick", action="store_true", help="one round, 4 ops, 3 sizes, short tests (smoke)")
    ap.add_argument("--rounds", type=int, help="runs of each configuration, interleaved (default 2, quick 1)")
    ap.add_argument("--setups", help="comma list among local, 2x1 (default both as root, else local)")
    ap.add_argument("--mpis", default=",".join(MPIS), help="comma list among openmpi, mpich")
    ap.add_argument("--programs", default="overlap,blocking", help="comma list among overlap, blocking")
    ap.add_argument("--ops", help=f"overlap.c's ops (default {OVERLAP_OPS}; quick {QUICK_OPS})")
    ap.add_argument("--colls", default=BLOCKING_COLLS, help=f"blocking collectives (default {BLOCKING_COLLS})")
    ap.add_argument("--sizes", help=f"blocking sizes in bytes (default {BLOCKING_SIZES}; quick {QUICK_SIZES})")
    ap.add_argument("--cluster-tool", type=Path, help="the goal-cluster binary (default: $CARGO_TARGET_DIR/release/"
                    "goal-cluster or target/release/goal-cluster of the source tree, built there if missing)")
    ap.add_argument("--timeout", type=float, help="seconds per run (default 240, quick 120)")
    ap.add_argument("--wait-idle", type=float, help="wait up to this many seconds for an idle machine before "
                    "each run (default 10, quick 1)")
    ap.add_argument("--retries", type=int, help="repeat a disturbed local run up to N times (default 1, quick 0)")
    ap.add_argument("--pairs", type=int, help="back-to-back pairs that settle a pure latency above native, "
                    "or a blocking point above 1.05 (default 6, quick 0)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin ranks")
    ap.add_argument("--goal-env", action="append", default=[], metavar="K=V",
                    help="extra environment for every run with the layer (e.g. GOAL_PROGRESS=kernel); "
                         "repeatable")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    a = ap.parse_args()
    root = os.geteuid() == 0
    a.setups_given = a.setups is not None
    a.cluster_skipped = None  # why the 2x1 setup of a default run was left out
    a.setups = [s.strip() for s in (a.setups or ("local,2x1" if root else "local")).split(",") if s.strip()]
    for s in a.setups:
        if s not in ("local", "2x1"):
            ap.error(f"unknown setup {s!r} (local, 2x1)")
    if "2x1" in a.setups and not root:
        ap.error("the 2x1 setup needs root (network namespaces, crates/goal-netns)")
    a.mpis = [m.strip() for m in a.mpis.split(",") if m.strip()]
    a.programs = [p.strip() for p in a.programs.split(",") if p.strip()]
    if a.rounds is None:
        a.rounds = 1 if a.quick else 2
    if a.timeout is None:
        a.timeout = 120 if a.quick else 240
    if a.retries is None:
        a.retries = 0 if a.quick else 1
    if a.pairs is None:
        a.pairs = 0 if a.quick else 6
    if a.wait_idle is None:
        a.wait_idle = 1 if a.quick else 10
    a.ops = a.ops or (QUICK_OPS if a.quick else OVERLAP_OPS)
    a.sizes = a.sizes or (QUICK_SIZES if a.quick else BLOCKING_SIZES)
    return a


# ---------------------------------------------------------------------------------------
# building and commands

def build(a) -> dict:
    """{(mpi, program): executable} for every MPI found; the layer's library per MPI."""
    exes = {}
    mpis = C.find_mpis()
    for name in a.mpis:
        if name not in mpis:
            C.warn(f"{name} is not available (scripts/install-deps.sh installs it); continuing without it")
            continue
        mpi = mpis[name]
        if "overlap" in a.programs:
            exe = C.BUILD / f"mpi_overlap.{name}"
            exe.parent.mkdir(parents=True, exist_ok=True)
            r = C.run([mpi.mpicc, *C.CFLAGS, "-I", C.BENCH, "-o", exe, C.BENCH / "overlap.c", "-lm"], timeout=300)
            if not r.ok:
                C.die(f"{name}: building overlap.c failed: {r.describe(40)}")
            exes[(name, "overlap")] = exe
        if "blocking" in a.programs:
            deps = [C.BENCH / f for f in ("p2p_common.h", "coll_common.h", "separator.h", "mpi_persistent.h")]
            exes[(name, "blocking")] = C.build_mpi_program(mpi, C.BENCH / "mpi_coll.c", C.BUILD / f"mpi_coll.{name}",
                                                           deps)
    return exes


# Repetitions of the reference progress thread (bench/ref_progress.c; mpi_report.ref_points).
REF_REPS, QUICK_REF_REPS = 45, 10
QUICK_FLOOR_REPS = 30


def run_reference(a, exe: Path, cname: str, rnd: int, ncpu: int) -> list[dict]:
    """bench/ref_progress.c once per reference point, as an ordinary thread and as a real-time
    one, between the two emulated hosts (rank r pinned to CPU r, as --pin pins the MPI ranks):
    rows {"test": "reference", "setup": "2x1", "lib": "thread" | "thread-rt", "round", ...}."""
    ns = [f"goal-{cname}-h{h}" for h in (0, 1)]
    peer = O.rail_addr(ns[0])
    if peer is None:
        C.warn("the reference progress thread: no address on host 0's rail0; not run")
        return []
    reps = str(QUICK_REF_REPS if a.quick else REF_REPS)
    rows = []
    for op, nb in R.ref_points(a.ops):
        for (lib, _), rt in zip(R.REF_LIBS, (False, True)):
            common = ["--op", op, "--bytes", str(nb), "--reps", reps, *(["--rt"] if rt else [])]
            r0 = ["ip", "netns", "exec", ns[0], exe, "--rank", "0", "--cpu", "0", *common]
            r1 = ["ip", "netns", "exec", ns[1], exe, "--rank", "1", "--peer", peer, "--cpu", str(1 % ncpu), *common]
            sh = f"{shlex.join(map(str, r0))} & {shlex.join(map(str, r1))} >&2; s=$?; wait $! && exit $s"
            r = C.run(["sh", "-c", sh], timeout=120)
            got = [x for x in C.parse_rows(r.stdout) if x.get("test") == "reference"]
            if not r.ok or not got:
                C.warn(f"the reference progress thread, {op} {C.fmt_bytes(nb)}: {r.describe(5)}")
                continue
            rows.append(dict(got[-1], setup="2x1", lib=lib, round=rnd))
    return rows


def layer(a, mpi: str) -> Path:
    lib = a.prefix.resolve() / "lib" / f"libgoal-mpi-{mpi}.so"
    if not lib.exists():
        C.die(f"{lib} does not exist: `make install PREFIX={a.prefix}` builds it where mpicc.{mpi} is found")
    return lib


def goal_env(a) -> dict:
    """--goal-env K=V pairs (SystemExit naming a malformed one)."""
    env = {}
    for kv in a.goal_env:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            C.die(f"--goal-env: '{kv}' is not K=V")
        env[k] = v
    return env


def program_args(a, program: str, lib: str, setup: str) -> list[str]:
    pin = [] if a.no_pin else ["--pin"]
    if program == "overlap":
        # Across hosts a 1 MiB operation takes 9-16 ms: with the default 40 ms budget overlap.c
        # times 10 repetitions, and one preempted computation moved the overlap by 10 points;
        # 2 s per point (its cap) gives 45.
        budget = [] if setup == "local" or a.quick else ["--budget-ms", "2000"]
        return ["--name", lib, "--tests", "overlap,background", "--ops", a.ops, *budget,
                "--max-s", "30" if a.quick else "90", *pin, *(["--quick"] if a.quick else [])]
    # blocking: the shared-memory separator of coll.py on one machine, MPI_Barrier across hosts
    sep = ["--sep-file", C.SEP_FILE] if setup == "local" else []
    return [lib, "--variants", "blocking", "--colls", a.colls, "--sizes", a.sizes,
            "--budget-ms", "8" if a.quick else "40", *pin, *sep, *(["--quick"] if a.quick else [])]


def configs(a, exes: dict, cname: str | None, tool: Path | None) -> list[Config]:
    out = []
    mpis = C.find_mpis()
    for setup in a.setups:
        for program in a.programs:
            for mpi in a.mpis:
                if (mpi, program) not in exes:
                    continue
                for goal in (False, True):
                    lib = mpi + ("+goal" if goal else "")
                    prog = [str(exes[(mpi, program)]), *program_args(a, program, lib, setup)]
                    env = {"GOAL_DEBUG": "1"}
                    if goal:
                        env["LD_PRELOAD"] = str(layer(a, mpi))
                        env.update(goal_env(a))
                        if setup != "local":
                            env["GOAL_RAILS"] = "rail0"
                    if mpi == "openmpi":
                        flags = [x for k, v in env.items() for x in ("-x", f"{k}={v}")]
                    else:
                        flags = [x for k, v in env.items() for x in ("-genv", k, v)]
                    if setup == "local":
                        head, _ = mpis[mpi].launch(2, [], bind="none")
                    else:
                        head = [str(tool), "mpirun", "--name", cname, "--np", "2", "--per-host", "1",
                                "--rails", "0", *([] if mpi == "openmpi" else ["--mpich"]), "--"]
                        # MPICH: TCP only (goal-cluster's UCX_TLS=self,tcp,posix,sysv lets UCX's
                        # shared memory reach the other emulated host: docs/cluster.md).
                        head += ["--mca", "btl", "tcp,self"] if mpi == "openmpi" else ["-genv", "UCX_TLS", "self,tcp"]
                    served = tuple(fn for fn in SERVED if any(f"MPI_I{o.split(':')[0]}" == fn for o in a.ops.split(",")))
                    out.append(Config(setup, lib, program, head + flags + prog, {}, served))
    return out


# ---------------------------------------------------------------------------------------
# running

def layer_report(stderr: str) -> dict:
    """The layer's GOAL_DEBUG report: {"started": bool, "calls": {fn: {"goal", "mpi", "ranks"}},
    "why": {reason: calls}, "compiled", "reused": schedules}, summed over ranks."""
    calls: dict = {}
    why: dict = {}
    for m in REPORT_RE.finditer(stderr):
        c = calls.setdefault(m.group(2), {"goal": 0, "mpi": 0, "ranks": 0})
        c["goal"] += int(m.group(3))
        c["mpi"] += int(m.group(4))
        c["ranks"] += 1
    for m in WHY_RE.finditer(stderr):
        why[m.group(3).strip()] = why.get(m.group(3).strip(), 0) + int(m.group(2))
    sched = [m.groups()[1:] for m in SCHED_RE.finditer(stderr)]
    return {"started": STARTED in stderr, "calls": calls, "why": why,
            "compiled": sum(int(c) for c, _ in sched), "reused": sum(int(r) for _, r in sched)}


def check_layer(cfg: Config, rep: dict, ranks: int) -> list[str]:
    """What is wrong with a run's layer report (empty: nothing)."""
    if not cfg.lib.endswith("+goal"):
        return ["the layer reported in a native run (LD_PRELOAD leaked?)"] if rep["started"] or rep["calls"] else []
    bad = []
    if not rep["started"]:
        bad.append("the layer did not start goal (no 'goal runs the non-blocking collectives' line)")
    if cfg.program == "overlap":
        for fn in cfg.served:
            c = rep["calls"].get(fn)
            if c is None or c["ranks"] != ranks or c["goal"] == 0:
                bad.append(f"{fn}: not reported on goal by every rank ({c})")
            elif c["mpi"]:
                bad.append(f"{fn}: {c['mpi']} call(s) FELL BACK to MPI: {rep['why']}")
    for fn, c in rep["calls"].items():
        if fn not in SERVED and c["mpi"]:
            bad.append(f"{fn}: {c['mpi']} call(s) went to MPI: {rep['why']}")
    return bad


def last_row(a, cfg: Config):
    """is_last for overlap.run_watched: after the program's last row it has FINALIZE_GRACE seconds
    to leave MPI_Finalize (MPICH 4.0.2 across the emulated hosts sometimes does not; the run is
    then killed and its rows kept). overlap.c prints {"test": "done"}; mpi_coll.c one row per
    point, counted here."""
    if cfg.program == "overlap":
        return lambda line: '"test": "done"' in line
    # The run's own --colls and --sizes (a pair's are a subset of the rounds').
    want = R.blocking_points(cfg.cmd[cfg.cmd.index("--colls") + 1], cfg.cmd[cfg.cmd.index("--sizes") + 1])
    seen = [0]

    def is_last(line: str) -> bool:
        seen[0] += '"test": "coll"' in line
        return seen[0] >= want
    return is_last


def run_one(a, cfg: Config, rnd: int, label: str) -> tuple[dict, list[dict]]:
    for attempt in range(a.retries + 1):
        idle, waited = C.wait_for_idle(a.wait_idle) if a.wait_idle > 0 else (None, 0.0)
        C.log(f"[{label}] {cfg.setup} {cfg.program} {cfg.lib} ..."
              + ("" if idle is not False else f" (machine still busy after {waited:.0f} s)"))
        with C.SeparatorFile() as sep, C.CpuMeter() as meter:
            res, hung = O.run_watched(sep.put_in(cfg.cmd), cfg.env, a.timeout, last_row(a, cfg))
        st = meter.result
        disturbed = st["foreign_pct"] > C.DISTURBED_PCT and not hung and cfg.setup == "local"
        if not disturbed or not res.ok or attempt == a.retries:
            break
        C.log(f"    other processes took {st['foreign_pct']}% of the CPUs: again")
    got = C.parse_rows(res.stdout)
    meta = next((x for x in got if x.get("test") == "meta"), {})
    rows = [x for x in got if x.get("test") not in ("meta", "done")]
    for x in rows:
        x.update(setup=cfg.setup, lib=cfg.lib, program=cfg.program, round=rnd)
    rep = layer_report(res.stderr)
    problems = check_layer(cfg, rep, 2) if res.ok or hung else []
    wrong = [x for x in rows if x.get("test") == "validate" or x.get("verified") is False]
    if wrong:
        problems.append(f"{len(wrong)} WRONG RESULT(S): {wrong[:3]}")
    run = {"setup": cfg.setup, "lib": cfg.lib, "program": cfg.program, "round": rnd, "rc": res.rc,
           "timed_out": res.timed_out, "seconds": round(res.seconds, 2), "rows": len(rows), "meta": meta,
           "attempts": attempt + 1, "disturbed": disturbed, "ok": (res.ok or hung) and not problems,
           "finalize_hang": hung, "layer": rep, "problems": problems, **st}
    if not (res.ok or hung):
        run["failure"] = res.describe()
        run["stderr_tail"] = res.stderr.strip().splitlines()[-30:]
        C.warn(f"{cfg.setup}/{cfg.program}/{cfg.lib} round {rnd + 1} failed: {res.describe()}")
    for p in problems:
        C.warn(f"{cfg.setup}/{cfg.program}/{cfg.lib} round {rnd + 1}: {p}")
    served = ", ".join(f"{fn} {c['goal']} on goal / {c['mpi']} to MPI" for fn, c in sorted(rep["calls"].items()))
    C.log(f"    {len(rows)} rows in {res.seconds:.1f} s" + (f"; layer: {served}" if served else ""))
    return run, rows


def one_op(cfg: Config, op: str, nbytes: int) -> Config:
    """cfg (an overlap run) for the overlap test of one operation, with a short budget."""
    cmd = list(cfg.cmd)
    cmd[cmd.index("--tests") + 1] = "overlap"
    cmd[cmd.index("--ops") + 1] = op if op == "barrier" else f"{op}:{nbytes}"
    if "--budget-ms" in cmd:
        cmd[cmd.index("--budget-ms") + 1] = "500"
    else:
        cmd[cmd.index("--ops") + 2:cmd.index("--ops") + 2] = ["--budget-ms", "500"]
    return Config(cfg.setup, cfg.lib, cfg.program, cmd, dict(cfg.env), (f"MPI_I{op}",))


def pair_configs(cfgs: list[Config], setup: str, mpi: str, program: str) -> tuple[Config, Config] | None:
    """The native and the with-the-layer configuration of one setup, MPI and program."""
    native = next((c for c in cfgs if (c.setup, c.lib, c.program) == (setup, mpi, program)), None)
    goal = next((c for c in cfgs if (c.setup, c.lib, c.program) == (setup, mpi + "+goal", program)), None)
    return (native, goal) if native and goal else None


def run_pairs(a, pair_cfgs: tuple[Config, Config], base_round: int, label: str, runs: list, count: list):
    """--pairs back-to-back pairs of pair_cfgs (native, with the layer), first one then the other in
    turn: for each pair, {lib: rows} of its runs that went well. The runs join `runs` (round
    base_round + the pair's number; their rows are not the rounds'); count = [runs so far, of all]."""
    out = []
    for i in range(a.pairs):
        got_by_lib = {}
        for cfg in pair_cfgs if i % 2 == 0 else pair_cfgs[::-1]:
            count[0] += 1
            run, got = run_one(a, cfg, base_round + i, f"pair {count[0]}/{count[1]}, {label}")
            run["pair"] = True
            runs.append(run)
            if run["ok"]:
                got_by_lib[cfg.lib] = got
        out.append(got_by_lib)
    return out


def ratio_of(t: dict, native: str, goal: str):
    """goal's / native's time of one pair, if both ran."""
    return round(t[goal] / t[native], 3) if native in t and goal in t and t[native] > 0 else None


def settle_latency(a, cfgs: list[Config], latency: list[dict], runs: list) -> dict:
    """Pairs for every pure latency the rounds put above native (see the module docs):
    {R.pair_key("latency", entry): {"pairs": the pairs' ratios, "pairs_ratio": their median}}. The
    pairs' runs join `runs` (round 1000 + the pair's number)."""
    close = [e for e in latency if C.isnum(e.get("ratio")) and e["ratio"] > 1.0]
    out = {}
    count = [0, len(close) * a.pairs * 2]
    for e in close:
        pc = pair_configs(cfgs, e["setup"], e["mpi"], "overlap")
        if not pc:
            continue
        native, goal = pc
        label = f"{R.op_name(e['op'], e['bytes'])} {e['setup']}/{e['mpi']}"
        ratios = []
        for got_by_lib in run_pairs(a, (one_op(native, e["op"], e["bytes"]), one_op(goal, e["op"], e["bytes"])),
                                    1000, label, runs, count):
            t = {}
            for lib, got in got_by_lib.items():
                row = next((x for x in got if x.get("test") == "overlap" and x.get("variant") == "none"), None)
                if row and C.isnum(row.get("t_pure_us")):
                    t[lib] = row["t_pure_us"]
            r = ratio_of(t, native.lib, goal.lib)
            if r is not None:
                ratios.append(r)
        if ratios:
            out[R.pair_key("latency", e)] = {"pairs": ratios, "pairs_ratio": round(C.median(ratios), 3)}
    return out


def some_points(cfg: Config, colls: list[str], sizes: list[int]) -> Config:
    """cfg (a blocking run) for these collectives and sizes only."""
    cmd = list(cfg.cmd)
    cmd[cmd.index("--colls") + 1] = ",".join(colls)
    cmd[cmd.index("--sizes") + 1] = ",".join(str(b) for b in sizes)
    return Config(cfg.setup, cfg.lib, cfg.program, cmd, dict(cfg.env), cfg.served)


def settle_blocking(a, cfgs: list[Config], blocking: list[dict], runs: list) -> dict:
    """Pairs for every blocking point the rounds put above NOISE, as settle_latency does for the
    pure latencies: per setup and MPI, the native run and the run with the layer of the blocking
    program on those points' collectives and sizes. {R.pair_key("blocking", entry): {"pairs": ratios,
    "pairs_ratio": median}}, for the close points only; runs join `runs` (round 2000 + the pair's
    number)."""
    close = [e for e in blocking if C.isnum(e.get("ratio")) and e["ratio"] > R.NOISE]
    groups: dict = {}
    for e in close:
        groups.setdefault((e["setup"], e["mpi"]), []).append(e)
    out = {}
    count = [0, len(groups) * a.pairs * 2]
    for (setup, mpi), es in groups.items():
        pc = pair_configs(cfgs, setup, mpi, "blocking")
        if not pc:
            continue
        native, goal = pc
        colls = list(dict.fromkeys(e["coll"] for e in es))
        sizes = sorted({e["bytes"] for e in es if e["bytes"]}) or [int(a.sizes.split(",")[0])]
        ratios: dict = {}
        for got_by_lib in run_pairs(a, (some_points(native, colls, sizes), some_points(goal, colls, sizes)),
                                    2000, f"blocking {setup}/{mpi}", runs, count):
            t: dict = {}
            for lib, got in got_by_lib.items():
                for x in got:
                    if x.get("test") == "coll" and C.isnum(x.get("median_us")):
                        t.setdefault((x["coll"], x["bytes"]), {})[lib] = x["median_us"]
            for e in es:
                r = ratio_of(t.get((e["coll"], e["bytes"]), {}), native.lib, goal.lib)
                if r is not None:
                    ratios.setdefault((e["coll"], e["bytes"]), []).append(r)
        for e in es:
            rs = ratios.get((e["coll"], e["bytes"]))
            if rs:
                out[R.pair_key("blocking", e)] = {"pairs": rs, "pairs_ratio": round(C.median(rs), 3)}
    return out


# ---------------------------------------------------------------------------------------

def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    out = C.out_base(a.out)
    t0 = time.time()
    machine = C.machine_info()
    ncpu = machine["nproc"] or 1
    if machine["loadavg_start"] and machine["loadavg_start"][0] > 0.5:
        C.warn(f"load average is {machine['loadavg_start'][0]:.2f}: something else is running "
               f"({', '.join(C.busy_processes()) or 'see top'}); results will be noisy")
    exes = build(a)
    if "2x1" in a.setups and C.find_cluster_tool(a.cluster_tool, build=False) is None \
            and not (C.REPO / "Cargo.toml").exists():
        why = f"{a.cluster_tool or 'goal-cluster'} does not exist and {C.REPO} is no source tree to build it in"
        if a.setups_given:
            C.die(f"2x1: {why} (--cluster-tool, or run the goal of the source tree)")
        C.warn(f"{why}: local setup only (the goal of the source tree, target/release/goal, runs both)")
        a.setups.remove("2x1")
        a.cluster_skipped = why
    cluster = "2x1" in a.setups
    tool = C.cluster_tool(a.cluster_tool) if cluster else None
    cname = f"mpi{os.getpid() % 100000}" if cluster else None
    cfgs = configs(a, exes, cname, tool)
    if not cfgs:
        C.die("nothing to run (no MPI found?)")
    runs, rows, refs, netcost, netfloor = [], [], [], None, None
    ref_exe = C.build_c_program(C.BENCH / "ref_progress.c", C.BUILD / "ref_progress", ["-pthread"]) \
        if cluster and "overlap" in a.programs and R.ref_points(a.ops) else None
    n = 0
    try:
        if cluster:
            C.run([tool, "down", "--name", cname], timeout=60)
            up = C.run([tool, "up", "--name", cname, "--hosts", "2", "--rails", "1", "--rate", O.RATE], timeout=120)
            if up.ok:
                netcost = O.net_cost(cname)
                if netcost is None:
                    C.warn("the emulated network's CPU cost could not be measured: no ceiling")
                if "overlap" in a.programs:
                    netfloor = F.measure(cname, ncpu, reps=QUICK_FLOOR_REPS if a.quick else F.REPS,
                                         windows=1 if a.quick else F.WINDOWS)
                    if netfloor is None:
                        C.warn("what the emulated network takes from each rank's computation could not be "
                               "measured: the ceiling is busy time's alone")
            elif a.setups_given:
                C.die(f"goal-cluster up failed: {up.describe(20)}")
            else:  # root without network namespaces (a container): the local setup alone, said
                C.warn(f"no emulated cluster here (goal-cluster up failed), local setup only: {up.describe(5)}")
                a.setups.remove("2x1")
                a.cluster_skipped = f"goal-cluster up failed: {up.describe(5)}"
                cfgs = [c for c in cfgs if c.setup in a.setups]
        for setup in a.setups:
            mine = [c for c in cfgs if c.setup == setup]
            for r in range(a.rounds):
                if setup == "2x1" and ref_exe and netcost is not None:
                    refs += run_reference(a, ref_exe, cname, r, ncpu)
                for cfg in mine[r % len(mine):] + mine[:r % len(mine)]:
                    n += 1
                    run, got = run_one(a, cfg, r, f"{n}/{len(cfgs) * a.rounds}, round {r + 1}")
                    runs.append(run)
                    rows += got
        usable = R.usable_rows({"rows": rows, "runs": runs})
        pairs = settle_latency(a, cfgs, R.latency_of(usable), runs) \
            if a.pairs > 0 and "overlap" in a.programs else {}
        if a.pairs > 0 and "blocking" in a.programs:
            pairs.update(settle_blocking(a, cfgs, R.blocking_of(usable), runs))
    except C.BenchError as e:
        C.die(str(e))
    finally:
        if cluster:
            C.run([tool, "down", "--name", cname], timeout=60)
    doc = {
        "benchmark": "mpi",
        "method": __doc__,
        "command": " ".join([sys.executable, *sys.argv]),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "machine": dict(machine, loadavg_end=C.loadavg()),
        "libraries": {m: {"layer": str(layer(a, m))} for m in a.mpis if any(k[0] == m for k in exes)},
        "configs": [{"setup": c.setup, "lib": c.lib, "program": c.program, "cmd": c.cmd} for c in cfgs],
        "net_cost": netcost,
        "net_floor": netfloor,
        "reference": refs,
        "cluster_skipped": a.cluster_skipped,
        "runs": runs,
        "rows": rows,
    }
    for run in runs:
        v = (run.get("meta") or {}).get("version")
        if v and run["lib"] in doc["libraries"]:
            doc["libraries"][run["lib"]]["version"] = O.short_version(" ".join(str(v).split()))
    R.summarize(doc, ncpu, pairs)
    doc["seconds"] = round(time.time() - t0, 1)
    print()
    print(doc["table"])
    C.write_json(out.with_suffix(".json"), doc)
    written = [out.with_suffix(".json"), *R.plot(doc, out)]
    print("wrote " + ", ".join(str(p) for p in written if p.exists()))
    bad = [r for r in runs if not r["ok"]]
    for r in bad:
        print(f"FAILED: {r['setup']}/{r['program']}/{r['lib']} round {r['round'] + 1}: "
              + "; ".join(r["problems"] or [r.get("failure", "?")]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
