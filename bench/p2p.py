#!/usr/bin/env python3
"""Point-to-point benchmark of goal against Open MPI and MPICH on this machine.

    python3 bench/p2p.py --prefix DIR [--out results/p2p] [--quick] [--rounds N]
    python3 bench/p2p.py --no-goal            # the MPIs only (no goal install needed)

Builds bench/mpi_p2p.c with each MPI's mpicc and bench/goal_p2p.c against the goal
installed under DIR (pkg-config + rpath), then runs, interleaved over several rounds:

    goal, goal-heap       DIR/bin/goalrun -n 2 build/bench/goal_p2p --pin [--heap]
    openmpi               mpirun.openmpi -n 2 --bind-to none ... --pin
    openmpi-nosc          the same with --mca btl_vader_single_copy_mechanism none
    mpich                 mpirun.mpich -n 2 -bind-to none ... --pin

Binding: the same for every library: launcher binding off, and each program pins all
of rank r's threads to CPU r (r % ncpus) itself right after init (`--pin`).
Each round runs every library once (rotating the order); the table shows the median over
rounds of each run's median, and ratios goal / best Open MPI setting computed per round
(both runs close in time) and then the median over rounds. Under --noise the ratios and
targets take the best of every peer run (MPICH included) instead: issue 43's targets,
within 1.2x at 8 B and no worse than the best peer at every size from 64 KiB.
A close call (goal within 5 % of a ratio target, or past it) is then measured again in --pairs
pairs of back-to-back runs of goal and the reference (the rounds' programs), each pair in one
state of the vCPUs, and the pairs' median ratio decides; the report gives the rounds' ratio
beside it.

Writes OUT.json (machine, commands, every raw row, the summary, the targets) and OUT.png.
--noise KIND,... runs all of it under each condition in turn (bench/noise.py): OUT.json then
holds one result per condition ("conditions"), every row and run says its "noise", and each
condition has its plot (OUT.png for none, OUT-noise-KIND.png).
Exit status: 1 if goal fails to build or run (or, with --strict, misses a target).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coll  # noqa: E402  (run_pairs: close calls decided by pairs of runs)
import common as C  # noqa: E402
import noise as N  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
LAT_SIZES = [0, 1, 8, 64, 512, KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB]
BW_SIZES = [64 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB]
OMPI_LIBS = ("openmpi", "openmpi-nosc")
# goal_p2p's localop_sum: one ADD of this many elements per type (test, bytes of one vector)
LOCALOP_SUM_ELEMS = 524288
LOCALOP_SUM = [("fp16", 2 * LOCALOP_SUM_ELEMS), ("bf16", 2 * LOCALOP_SUM_ELEMS), ("fp32", 4 * LOCALOP_SUM_ELEMS)]

# (section, bytes, relation, bound, text); latency compares goal's latency_sched with
# MPI's ping-pong, bandwidth the streaming test, localop is absolute (us)
TARGETS = [
    ("latency", 8, "<=", 1.2, "latency 8 B within 1.2x of Open MPI"),
    ("latency", KiB, "<=", 1.2, "latency 1 KiB within 1.2x of Open MPI"),
    ("latency", 64 * KiB, "<=", 1.0, "latency 64 KiB no more than Open MPI"),
    ("latency", MiB, "<=", 1.0, "latency 1 MiB no more than Open MPI"),
    ("bandwidth", 64 * KiB, ">=", 1.0, "bandwidth 64 KiB at least Open MPI"),
    ("bandwidth", MiB, ">=", 1.0, "bandwidth 1 MiB at least Open MPI"),
    ("bandwidth", 16 * MiB, ">=", 1.0, "bandwidth 16 MiB at least Open MPI"),
    ("runwait_localop", 8, "<", 1.0, "Run+Wait of one local op under 1 us"),
]
MPI_LIBS = ("openmpi", "openmpi-nosc", "mpich")


def noise_targets() -> list:
    """Issue 43's targets under a --noise condition, against the best peer run: within 1.2x
    of its latency at 8 B, within 1.0x of its latency and at least its bandwidth at every
    size from 64 KiB."""
    t = [("latency", 8, "<=", 1.2, "latency 8 B within 1.2x of the best peer")]
    t += [("latency", n, "<=", 1.0, f"latency {C.fmt_bytes(n)} no more than the best peer")
          for n in LAT_SIZES if n >= 64 * KiB]
    t += [("bandwidth", n, ">=", 1.0, f"bandwidth {C.fmt_bytes(n)} at least the best peer")
          for n in BW_SIZES if n >= 64 * KiB]
    return t


class Judge(NamedTuple):
    """How one condition is judged (see `judged_by`)."""
    targets: list
    peers: tuple   # the libraries a ratio divides by, the best of them
    name: str      # their name in the report ("best Open MPI", "best peer")
    col: str       # and in a ratio's column ("ompi", "best")


def judged_by(kind: str, libs) -> Judge:
    """How one condition is judged: the quiet machine keeps the Open MPI targets; a noise
    condition takes the best peer."""
    if kind == "none":
        return Judge(TARGETS, OMPI_LIBS, "best Open MPI", "ompi")
    return Judge(noise_targets(), tuple(l for l in libs if l in MPI_LIBS), "best peer", "best")


@dataclass
class Config:
    name: str
    kind: str            # "goal" | "mpi"
    cmd: list[str]
    env: dict = field(default_factory=dict)
    note: str = ""
    ranks: int = 2           # for coll.run_once, which runs these too
    may_fail: bool = False


# ---------------------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", type=Path, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "p2p"),
                    help="output path without extension (default: results/p2p)")
    ap.add_argument("--quick", action="store_true", help="few repetitions, one round (CI smoke)")
    ap.add_argument("--rounds", type=int, help="runs of each library, interleaved (default 5, quick 1)")
    ap.add_argument("--no-goal", action="store_true", help="skip goal (benchmark the MPIs only)")
    ap.add_argument("--no-heap", action="store_true", help="skip the goal-heap (GOAL_Alloc) variant")
    ap.add_argument("--goal-progress", default="",
                    help="comma list of GOAL_PROGRESS modes to run as extra goal variants "
                         "(e.g. thread,spin); default: goal's own default only")
    ap.add_argument("--libs", default="", help="comma list: run only these library names")
    ap.add_argument("--no-pin", action="store_true", help="do not pin ranks (no binding at all)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    ap.add_argument("--wait-idle", type=float,
                    help="before each run wait up to this many seconds for the machine to be idle "
                         "(default 15, quick 5)")
    ap.add_argument("--retries", type=int, default=2,
                    help="repeat a run disturbed by foreign CPU use (>10%%) up to N times (default 2)")
    ap.add_argument("--pairs", type=int, help="close calls (goal within 5%% of a ratio target, or past it) "
                    "measured again in this many pairs of back-to-back runs of goal and the reference, "
                    "whose median ratio decides (default 6, quick 0)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a goal target is missed")
    ap.add_argument("--all-states", action="store_true",
                    help="summarize all runs, also those made while the vCPUs were far apart "
                         "(default: only the runs in the fastest core-to-core state, if every "
                         "library has one)")
    N.add_args(ap)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    a = ap.parse_args()
    if not a.no_goal and a.prefix is None:
        ap.error("--prefix DIR is required (or --no-goal)")
    if a.rounds is None:
        a.rounds = 1 if a.quick else 5
    if a.pairs is None:
        a.pairs = 0 if a.quick else 6
    if a.wait_idle is None:
        a.wait_idle = 5 if a.quick else 15
    return a


def build_and_configure(a) -> tuple[list[Config], dict, C.Goal | None]:
    """Build the programs; return the run configurations and library facts."""
    configs: list[Config] = []
    libinfo: dict = {}
    common_args = (["--quick"] if a.quick else []) + ([] if a.no_pin else ["--pin"])
    deps = [C.BENCH / "p2p_common.h"]
    goal = None

    if not a.no_goal:
        try:
            goal = C.find_goal(a.prefix)
            exe = C.build_goal_program(goal, C.BENCH / "goal_p2p.c", C.BUILD / "goal_p2p", deps)
        except C.BenchError as e:
            C.die(f"goal: {e}")
        modes = [m.strip() for m in a.goal_progress.split(",") if m.strip()] or [None]
        for mode in modes:
            suffix = f"-{mode}" if mode else ""
            env = {"GOAL_PROGRESS": mode} if mode else {}
            for heap in ([False] if a.no_heap else [False, True]):
                name = ("goal-heap" if heap else "goal") + suffix
                cmd = [str(goal.goalrun), "-n", "2", str(exe), "--name", name, *common_args]
                if heap:
                    cmd.append("--heap")
                configs.append(Config(name, "goal", cmd, env,
                                      "buffers from GOAL_Alloc" if heap else "buffers from aligned_alloc"))
        libinfo["goal"] = {"prefix": str(goal.prefix), "version": goal.version,
                           "cflags": goal.cflags, "libs": goal.libs}

    mpis = C.find_mpis()
    for name in ("openmpi", "mpich"):
        if name not in mpis:
            C.warn(f"{name} not found (run scripts/install-deps.sh); continuing without it")
    for name, mpi in mpis.items():
        try:
            exe = C.build_mpi_program(mpi, C.BENCH / "mpi_p2p.c", C.BUILD / f"mpi_p2p.{name}", deps)
        except C.BenchError as e:
            C.warn(f"{name}: build failed, skipping it:\n{e}")
            continue
        libinfo[name] = {"mpicc": mpi.mpicc, "mpirun": mpi.mpirun}
        variants = [(name, {}, "default settings")]
        if name == "openmpi":
            variants.append(("openmpi-nosc", {"btl_vader_single_copy_mechanism": "none"},
                             "btl_vader_single_copy_mechanism none"))
        for vname, mca, note in variants:
            cmd, env = mpi.launch(2, [exe, vname, *common_args], mca=mca, bind="none")
            configs.append(Config(vname, "mpi", cmd, env, note))

    if a.libs:
        want = {x.strip() for x in a.libs.split(",") if x.strip()}
        unknown = want - {c.name for c in configs}
        if unknown:
            C.warn(f"--libs: no such library here: {', '.join(sorted(unknown))}")
        configs = [c for c in configs if c.name in want]
    if not configs:
        C.die("nothing to run")
    return configs, libinfo, goal


# ---------------------------------------------------------------------------------------

def run_all(a, configs: list[Config]):
    """Every configuration once per round, under the noise a.noise_kind (bench/noise.py), each
    run coll.run_once's: between two probes of the CPUs' state, repeated while another process
    disturbed it or the vCPUs changed state."""
    rows, runs, failures = [], [], []
    n, kind = len(configs), a.noise_kind
    for r in range(a.rounds):
        order = configs[r % n:] + configs[:r % n]
        for pos, cfg in enumerate(order):
            res, st = coll.run_once(a, cfg, f"[round {r + 1}/{a.rounds}] {cfg.name}")
            c2c, disturbed, unstable = st["c2c_ns"], st["disturbed"], st["unstable"]
            got = C.parse_rows(res.stdout)
            meta = next((x for x in got if x.get("test") == "meta"), {})
            data = [x for x in got if x.get("test") != "meta"]
            for x in data:
                x["lib"] = cfg.name
                x["round"] = r
                x["c2c_ns"] = c2c
                x["clean_run"] = not (disturbed or unstable)
                x["noise"] = kind
            run = dict(st, round=r, position=pos, rows=len(data), meta=meta)
            if not res.ok:
                failures.append((cfg, res))
            runs.append(run)
            rows += data
            C.log(f"    {len(data)} rows in {res.seconds:.1f} s (c2c {c2c} ns, foreign CPU {st['foreign_pct']}%, "
                  f"steal {st['steal_pct']}%)")
    return rows, runs, failures


# ---------------------------------------------------------------------------------------
# aggregation

def index(rows, all_rows=None):
    """(lib, test, bytes) -> {round: row}; with all_rows, also ("*all*", lib, test, bytes)
    over every run (for state-matched Open MPI references of a goal run)."""
    ix: dict = {}
    for x in rows:
        ix.setdefault((x["lib"], x["test"], x["bytes"]), {})[x["round"]] = x
    for x in all_rows or ():
        ix.setdefault(("*all*", x["lib"], x["test"], x["bytes"]), {})[x["round"]] = x
    return ix


def select_state(rows, runs, libs, all_states: bool):
    """Which runs the summary uses: the rounds in which every library's run was clean, for
    every library (see common.select_clean). Returns (rows, note)."""
    c2cs = [r["c2c_ns"] for r in runs if C.isnum(r.get("c2c_ns"))]
    if all_states:
        return rows, ("summary over all runs" + (f", mixing core-to-core states ({min(c2cs):.0f}.."
                                                 f"{max(c2cs):.0f} ns)" if c2cs else ""))
    keep, shared, own, fallback = C.select_clean([r for r in runs if r["lib"] in libs])
    if len(keep) == len(runs) and not fallback:
        return rows, ""
    note = C.clean_note(runs, keep, shared, own, fallback) + " (all rows are in the JSON)"
    return [x for x in rows if (x["lib"], x["round"]) in keep], note


def summarize(rows):
    out = []
    for (lib, test, nbytes), per_round in sorted(index(rows).items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        us = [x["median_us"] for x in per_round.values()]
        s = {"lib": lib, "test": test, "bytes": nbytes, "rounds": len(us),
             "median_us": C.median(us), "min_round_us": min(us), "max_round_us": max(us)}
        g = [x["gbps"] for x in per_round.values() if "gbps" in x]
        if g:
            s.update(gbps=C.median(g), min_round_gbps=min(g), max_round_gbps=max(g))
        out.append(s)
    return out


def value(ix, lib, test, nbytes, fld="median_us"):
    """median over rounds and per-round dict of one field"""
    per = {r: x.get(fld) for r, x in ix.get((lib, test, nbytes), {}).items() if C.isnum(x.get(fld))}
    return (C.median(per.values()) if per else float("nan")), per


def ratio(ix, glib, gtest, mtest, nbytes, libs, fld="median_us", higher_better=False, peers=OMPI_LIBS):
    """goal / best setting of `peers` (Open MPI's unless told), state-matched: each goal run
    is compared with the peers' runs made in the same core-to-core state (see common.STATE_FACTOR; the median of
    each setting's matching runs, then the better setting): first those in the summary,
    then any clean run, then any run of that state; else the peers' runs of its own
    round, else all. The result is the median over goal's runs."""
    g = ix.get((glib, gtest, nbytes), {})
    summed = [ix.get((lib, mtest, nbytes), {}) for lib in libs if lib in peers]
    every = [ix.get(("*all*", lib, mtest, nbytes), {}) for lib in libs if lib in peers]
    pick = max if higher_better else min
    ratios = []
    for r, gx in g.items():
        gv = gx.get(fld)
        if not C.isnum(gv):
            continue
        best = None
        st = lambda ox: C.same_state(gx.get("c2c_ns"), ox.get("c2c_ns"))  # noqa: E731
        for pool, match in ((summed, st),                                         # summarized, same state
                            (every, lambda ox: st(ox) and ox.get("clean_run", True)),  # any clean run, same state
                            (every, st),                                          # any run, same state
                            (summed, lambda ox: ox["round"] == r), (summed, lambda ox: True)):
            for per in pool:
                vals = [ox[fld] for ox in per.values() if C.isnum(ox.get(fld)) and match(ox)]
                if vals:
                    v = C.median(vals)
                    best = v if best is None else pick(best, v)
            if best is not None:
                break
        if best:
            ratios.append(gv / best)
    return C.median(ratios) if ratios else float("nan")


def evaluate_targets(ix, libs, kind="none"):
    goals = [l for l in libs if l.startswith("goal")]
    tlist, peers, _, _ = judged_by(kind, libs)
    have_peers = any(l in peers for l in libs)
    res = []
    for sect, nbytes, rel, bound, text in tlist:
        for g in goals:
            if sect == "runwait_localop":
                v = value(ix, g, "runwait_localop", nbytes)[0]
                unit = "us"
            elif not have_peers:
                v, unit = float("nan"), "x"
            elif sect == "latency":
                v, unit = ratio(ix, g, "latency_sched", "latency", nbytes, libs, peers=peers), "x"
            else:
                v, unit = ratio(ix, g, "bandwidth", "bandwidth", nbytes, libs, "gbps", True, peers), "x"
            if not C.isnum(v):
                ok = None
            else:
                ok = {"<=": v <= bound, "<": v < bound, ">=": v >= bound}[rel]
            res.append({"target": text, "lib": g, "section": sect, "bytes": nbytes, "relation": rel,
                        "bound": bound, "value": v if C.isnum(v) else None, "unit": unit, "ok": ok})
    return res


def verdict_cell(targets, sect, nbytes, tlist=TARGETS):
    ts = [t for t in targets if t["section"] == sect and t["bytes"] == nbytes]
    if not ts:
        hit = [t for t in tlist if t[0] == sect and t[1] == nbytes]
        return f"{hit[0][2]}{hit[0][3]:.1f}x (no goal)" if hit else ""
    t0 = ts[0]
    unit = "x" if t0["unit"] == "x" else " us"
    marks = []
    for t in ts:
        name = t["lib"].replace("goal-heap", "heap") if len(ts) > 1 else ""
        m = "n/a" if t["ok"] is None else ("ok" if t["ok"] else "MISS")
        marks.append(f"{name} {m}".strip())
    return f"{t0['relation']}{t0['bound']:.1f}{unit}: " + ", ".join(marks)


# ---------------------------------------------------------------------------------------
# paired re-measurement of close calls

# Per section of a target: the test whose rows decide it (goal's, its peers'), the rows'
# figure, its unit, and whether higher is better.
PAIR_TESTS = {"latency": ("latency_sched", "latency", "median_us", "us", False),
              "bandwidth": ("bandwidth", "bandwidth", "gbps", "gbps", True)}


def is_close(t) -> bool:
    """A ratio target whose verdict the rounds cannot be trusted with: goal within 5 % of the
    bound, or past it (a ratio of bandwidths: below 1.05 of a bound it must reach)."""
    if t["unit"] != "x" or t["section"] not in PAIR_TESTS or not C.isnum(t["value"]):
        return False
    return t["value"] < 1.05 * t["bound"] if t["relation"] == ">=" else t["value"] > 0.95 * t["bound"]


def reference(ix, libs, t, peers) -> str | None:
    """The peer target t compares goal with: the best of `peers` at t's point over the
    summarized rounds (the lowest median latency, the highest median bandwidth)."""
    _, test, fld, _, higher = PAIR_TESTS[t["section"]]
    got = [(value(ix, lib, test, t["bytes"], fld)[0], lib) for lib in libs if lib in peers]
    got = [(v, lib) for v, lib in got if C.isnum(v)]
    if not got:
        return None
    return (max if higher else min)(got)[1]


def duel(a, configs: list[Config], t: dict, ref: str) -> list[dict]:
    """Measures goal (t's library) and the peer `ref` again at target t's point, in a.pairs
    pairs of back-to-back runs (goal first in every other pair, each pair in one state of the
    vCPUs), and gives t the pairs' verdict, the median over pairs of their ratio
    (coll.run_pairs). The rounds' ratio compares each goal run with the best peer's runs of
    the same state, several rounds apart; a pair's two runs follow each other. Each run is the
    rounds' whole program, not the one test: goal's choices of path learn from the tests
    before (its bandwidth test alone read 1 MiB windows at 11.0-12.0 GB/s in five runs, after
    the latency tests 9.2-12.1). The run records."""
    g = next((c for c in configs if c.name == t["lib"]), None)
    m = next((c for c in configs if c.name == ref), None)
    if g is None or m is None:
        return []
    gtest, mtest, fld, unit, higher = PAIR_TESTS[t["section"]]
    t["ref_lib"] = ref
    matches = lambda cfg, x: (x.get("test") == (gtest if cfg.kind == "goal" else mtest)  # noqa: E731
                              and x.get("bytes") == t["bytes"])
    what = f"{t['lib']} {t['section']} {C.fmt_bytes(t['bytes'])}"
    return coll.run_pairs(a, t, (g, m), what, short(ref), matches, a.pairs,
                          measure=lambda x: x[fld], higher_better=higher, unit=unit)


def paired_lines(targets) -> list[str]:
    """The report's lines for the close calls pairs decided."""
    out = []
    for t in targets:
        p = t.get("paired")
        if not p or not p.get("decides"):
            continue
        rv = t["rounds_verdict"]
        out.append(f"  paired  {t['lib']}: {t['target']}: {C.fmt_num(t['value'], 3)}x (goal faster in "
                   f"{p['goal_faster']} of {len(p['pairs'])} pairs; vs {short(t['ref_lib'])}), "
                   f"{'ok' if t['ok'] else 'MISS'}; the rounds said {C.fmt_num(rv['value'], 3)}x, "
                   f"{'ok' if rv['ok'] else 'MISS'}")
    return out


# ---------------------------------------------------------------------------------------
# report

def short(lib: str) -> str:
    return {"openmpi": "ompi", "openmpi-nosc": "ompi-nosc"}.get(lib, lib)


def report(ix, libs, targets, kind="none") -> str:
    mpis = [l for l in MPI_LIBS if l in libs]
    goals = [l for l in libs if l.startswith("goal")]
    tlist, peers, pname, col = judged_by(kind, libs)
    has_peers = any(l in peers for l in libs)
    out = []

    # latency
    hdr = ["bytes"] + [short(m) for m in mpis]
    for g in goals:
        hdr += [f"{g}:sched", f"{g}:rw"]
    if has_peers:
        hdr += [f"{g}/{col}" for g in goals]
    hdr += ["target"]
    rows = []
    for n in LAT_SIZES:
        row = [C.fmt_bytes(n)] + [C.fmt_num(value(ix, m, "latency", n)[0]) for m in mpis]
        for g in goals:
            row += [C.fmt_num(value(ix, g, "latency_sched", n)[0]), C.fmt_num(value(ix, g, "latency_runwait", n)[0])]
        if has_peers:
            for g in goals:
                rr = ratio(ix, g, "latency_sched", "latency", n, libs, peers=peers)
                rw = ratio(ix, g, "latency_runwait", "latency", n, libs, peers=peers)
                row.append(f"{C.fmt_num(rr, 2)} ({C.fmt_num(rw, 2)})" if C.isnum(rr) else "-")
        row.append(verdict_cell(targets, "latency", n, tlist))
        rows.append(row)
    out.append("One-way latency [us], median over rounds"
               + (" (goal: sched = thesis method, one schedule of up to 100 ping-pongs, ~2 ms, as the MPI loops' batches; "
                  "rw = one round trip per Run+Wait, the median of single round trips, so trips a detour or preemption hit "
                  f"drop out of it; ratio = sched/{pname} (rw/{pname}))" if goals else ""))
    out.append(C.table(hdr, rows))

    # bandwidth
    hdr = ["bytes"] + [short(m) for m in mpis] + goals
    if has_peers:
        hdr += [f"{g}/{col}" for g in goals]
    hdr += ["target"]
    rows = []
    for n in BW_SIZES:
        row = [C.fmt_bytes(n)] + [C.fmt_num(value(ix, m, "bandwidth", n, "gbps")[0]) for m in mpis + goals]
        if has_peers:
            row += [C.fmt_num(ratio(ix, g, "bandwidth", "bandwidth", n, libs, "gbps", True, peers), 2)
                    for g in goals]
        row.append(verdict_cell(targets, "bandwidth", n, tlist))
        rows.append(row)
    out.append("")
    out.append("Streaming bandwidth [GB/s = 1e9 B/s], median over rounds"
               + (f" (ratio = goal / {pname})" if has_peers and goals else ""))
    out.append(C.table(hdr, rows))

    if goals:
        out.append("")
        out.append("Run+Wait of a schedule with one GOAL_LocalOp (COPY, 8 bytes) [us]")
        rows = [[g, C.fmt_num(value(ix, g, "runwait_localop", 8)[0]),
                 C.fmt_num(value(ix, g, "runwait_localop", 8, "min_us")[0]),
                 verdict_cell([t for t in targets if t["lib"] == g], "runwait_localop", 8, tlist)] for g in goals]
        out.append(C.table(["lib", "median", "min", "target"], rows))
        out.append("")
        out.append(f"Run+Wait of a schedule with one GOAL_LocalOp ADD r = a + b of {LOCALOP_SUM_ELEMS:,} "
                   "elements [us, median] (16-bit: widen, add in fp32, round to nearest even)")
        rows = []
        for g in goals:
            us = {t: value(ix, g, f"localop_sum_{t}", n)[0] for t, n in LOCALOP_SUM}
            rows.append([g] + [C.fmt_num(us[t]) for t, _ in LOCALOP_SUM]
                        + [C.fmt_num(us[t] / us["fp32"], 2) if C.isnum(us[t]) and C.isnum(us["fp32"]) else "n/a"
                           for t in ("fp16", "bf16")])
        out.append(C.table(["lib", "fp16 (1 MiB)", "bf16 (1 MiB)", "fp32 (2 MiB)", "fp16/fp32", "bf16/fp32"], rows))
    return "\n".join(out)


def plot(ix, libs, targets, path: Path, title: str, footnote: str, kind="none") -> bool:
    """2x2: latency (log-log), small-message latency (linear), bandwidth, ratios to the best
    Open MPI setting (quiet) or the best peer (under noise)."""
    plt = C.pyplot()
    if plt is None:
        return False
    import matplotlib.ticker as mt
    mpis = [l for l in MPI_LIBS if l in libs]
    goals = [l for l in libs if l.startswith("goal")]
    _, peers, pname, _ = judged_by(kind, libs)
    has_peers = any(l in peers for l in libs)
    fig, axes = plt.subplots(2, 2, figsize=(14, 10.5), constrained_layout=True)
    ax_lat, ax_small, ax_bw, ax_ratio = axes[0][0], axes[0][1], axes[1][0], axes[1][1]
    lat_sizes = [n for n in LAT_SIZES if n > 0]
    small_sizes = [n for n in lat_sizes if n <= 16 * KiB]

    def series(lib, test, sizes, fld, label, ax, band=True, **extra):
        xs, ys, lo, hi = [], [], [], []
        for n in sizes:
            med, per = value(ix, lib, test, n, fld)
            if C.isnum(med):
                xs.append(n)
                ys.append(med)
                lo.append(min(per.values()))
                hi.append(max(per.values()))
        if not xs:
            return
        st = C.style(lib)
        st.update(extra)
        ax.plot(xs, ys, label=label, markersize=4.5, linewidth=1.6, **st)
        if band and any(h != l for h, l in zip(hi, lo)):
            ax.fill_between(xs, lo, hi, color=st.get("color"), alpha=0.12, linewidth=0)

    for ax, sizes in ((ax_lat, lat_sizes), (ax_small, small_sizes)):
        for m in mpis:
            series(m, "latency", sizes, "median_us", m, ax)
        for g in goals:
            series(g, "latency_sched", sizes, "median_us", f"{g} (schedule of up to 100)", ax)
            series(g, "latency_runwait", sizes, "median_us", f"{g} (Run+Wait per round trip)", ax,
                   band=False, linestyle=":", marker=None)
        C.bytes_axis(ax, sizes)
        ax.set_ylabel("one-way latency [µs]")
    ax_lat.set_yscale("log")
    ax_lat.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax_lat.set_title("Ping-pong latency, log-log (size 0 not shown)")
    ax_small.set_ylim(bottom=0)
    ax_small.set_title("Small messages, linear scale")

    for lib in mpis + goals:
        series(lib, "bandwidth", BW_SIZES, "gbps", lib, ax_bw)
    C.bytes_axis(ax_bw, BW_SIZES, min_step=2)
    ax_bw.set_ylim(bottom=0)
    ax_bw.set_ylabel("bandwidth [GB/s]")
    ax_bw.set_title("Streaming bandwidth (window of sends + 1-byte ack)")

    # ratios of every other library to the best peer setting, same core-to-core state
    ax = ax_ratio
    ys_all = []
    if has_peers:
        for lib in [l for l in libs if l not in peers]:
            gtest = "latency_sched" if lib.startswith("goal") else "latency"
            st = C.style(lib)
            ys = [ratio(ix, lib, gtest, "latency", n, libs, peers=peers) for n in lat_sizes]
            ax.plot(lat_sizes, ys, label=f"{lib}: latency ratio (lower is better)", markersize=4.5,
                    linewidth=1.6, **st)
            yb = [ratio(ix, lib, "bandwidth", "bandwidth", n, libs, "gbps", True, peers) for n in BW_SIZES]
            ax.plot(BW_SIZES, yb, label=f"{lib}: bandwidth ratio (higher is better)", markersize=8,
                    linewidth=1.6, **dict(st, linestyle="--", marker="*"))
            ys_all += [y for y in ys + yb if C.isnum(y)]
        ax.axhline(1.0, color="black", linewidth=0.9)
        if goals:
            ax.axhline(1.2, color="grey", linewidth=0.8, linestyle=":")
            ax.annotate("1.2x: small-message latency target", (lat_sizes[0], 1.2), xytext=(2, 2),
                        textcoords="offset points", fontsize=8, color="grey")
        for t in targets:
            if t["section"] in ("latency", "bandwidth") and t["ok"] is not None and t["value"] is not None:
                ax.plot([t["bytes"]], [t["value"]], marker="o", markersize=14, markerfacecolor="none",
                        markeredgewidth=1.5, markeredgecolor="green" if t["ok"] else "red", linewidth=0)
        ax.set_yscale("log")
        lo = min(ys_all + [0.8]) / 1.15
        hi = max(ys_all + [1.3]) * 1.15
        ax.set_ylim(lo, hi)
        ticks = [t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.5, 2, 3, 5, 10, 20, 50)
                 if lo <= t <= hi]
        ax.yaxis.set_major_locator(mt.FixedLocator(ticks))
        ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_locator(mt.NullLocator())
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
        ax.set_title(f"Ratio to the {pname} setting" + ("; circles: targets (green met, red missed)"
                                                         if goals else ""))
    else:
        ax.text(0.5, 0.5, f"no results of the {pname}", ha="center", va="center", transform=ax.transAxes)
    C.bytes_axis(ax, lat_sizes)
    ax.set_ylabel(f"ratio to {pname}")

    for a_ in (ax_lat, ax_small, ax_bw, ax_ratio):
        a_.grid(True, which="major", alpha=0.3)
        if a_ is not ax_ratio:
            a_.legend(fontsize=8, loc="lower left" if a_ is ax_bw else "upper left")
    fig.suptitle(title, fontsize=13)
    fig.text(0.5, -0.005, footnote, ha="center", va="top", fontsize=8, wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
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
        C.warn(f"load average is {machine['loadavg_start'][0]:.2f} before starting: "
               f"something else is running ({', '.join(C.busy_processes()) or 'see top'}); "
               "results will be noisy")

    configs, libinfo, goal = build_and_configure(a)
    libs = [c.name for c in configs]
    kinds = N.kinds(a)
    C.log(f"libraries: {', '.join(libs)}; {a.rounds} round(s)"
          + (f"; under each of: {', '.join(kinds)}" if kinds != ["none"] else ""))
    results, rc = {}, 0
    for kind in kinds:
        results[kind], code = condition(a, configs, libinfo, machine, kind, out)
        rc = max(rc, code)
    N.write(out, "p2p", a, machine, results)
    return rc


def condition(a, configs, libinfo, machine, kind: str, out: Path) -> tuple[dict, int]:
    """The whole measurement under one --noise kind: runs, summary, report, plot; returns the
    condition's result (the JSON's content, or its part for this kind) and the exit status."""
    libs = [c.name for c in configs]
    if kind != "none":
        print(f"\n=== noise: {kind} ===")
    t0 = time.time()
    a.noise_kind, a.noise_tool = kind, N.goal_tool(a.prefix)
    rows, runs, failures = run_all(a, configs)

    # facts from the programs' meta lines
    for run in runs:
        meta = run.get("meta") or {}
        info = libinfo.setdefault(run["lib"], {})
        if meta.get("version"):
            info["version"] = " ".join(str(meta["version"]).split())
        if meta.get("affinity"):
            info["affinity_ranks"] = meta["affinity"]
    for c in configs:
        info = libinfo.setdefault(c.name, {})
        info.update(command=c.cmd, env=c.env, note=c.note, kind=c.kind)

    c2cs = [r["c2c_ns"] for r in runs if C.isnum(r.get("c2c_ns"))]
    selected, state_note = select_state(rows, runs, libs, a.all_states)
    ix = index(selected, rows)
    targets = evaluate_targets(ix, libs, kind)
    close = [t for t in targets if is_close(t)] if a.pairs > 0 else []
    if close:
        C.log(f"{len(close)} close call(s): measuring each again in {a.pairs} pairs of runs")
    peers, paired_runs = judged_by(kind, libs).peers, []
    for t in close:
        ref = reference(ix, libs, t, peers)
        if ref:
            paired_runs += duel(a, configs, t, ref)
    elapsed = time.time() - t0
    text = report(ix, libs, targets, kind)
    steal = [r.get("steal_pct", 0) for r in runs]
    notes = [state_note] if state_note else []
    dist = [f"{r['lib']}#{r['round'] + 1} ({r['foreign_pct']}%)" for r in runs if r.get("disturbed")]
    if dist:
        notes.append(f"{len(dist)} of {len(runs)} runs shared the CPUs with other processes even after "
                     f"retries: {', '.join(dist)}; their numbers are suspect")
    if c2cs and not C.same_state(min(c2cs), max(c2cs)):
        notes.append(f"core-to-core latency changed between runs ({min(c2cs):.0f}..{max(c2cs):.0f} ns): "
                     "the host moved the vCPUs, and with them every shared-memory latency; ratios "
                     "compare runs of the same state")
    unst = [f"{r['lib']}#{r['round'] + 1}" for r in runs if r.get("unstable")]
    if unst:
        notes.append(f"core-to-core state changed during {len(unst)} run(s) even after retries: {', '.join(unst)}")
    if steal and max(steal) > 2:
        notes.append(f"CPU steal up to {max(steal):.1f}% during some runs (busy host)")
    if (n := C.cpu_ratio_note(runs)):
        notes.append(n)
    if (n := N.condition_note(kind, runs)):
        notes.append(n)
    machine["loadavg_end"] = C.loadavg()

    print()
    print(text)
    print()
    binding = "none (no pinning)" if a.no_pin else "rank r pinned to CPU r by the program (launcher binding off)"
    if kind == "oversub":
        binding = f"launcher binding off, no pinning, the job on CPUs {N.oversub_cpus(2)} (--noise oversub)"
    print(f"machine: {machine['hostname']}, {machine['nproc']} CPUs ({machine['cpu_model']}), "
          f"kernel {machine['kernel']}; binding: {binding}")
    if c2cs:
        print(f"core-to-core one-way latency (cache line, CPU 0<->1): {C.median(c2cs):.1f} ns median "
              f"({min(c2cs):.1f}..{max(c2cs):.1f})")
    for lib in libs:
        v = libinfo.get(lib, {}).get("version")
        if v:
            print(f"{lib}: {v}")
    for n in notes:
        print(f"NOTE: {n}")
    goal_targets = [t for t in targets if t["ok"] is not None]
    if goal_targets:
        met = sum(1 for t in goal_targets if t["ok"])
        decided = paired_lines(goal_targets)
        print(f"targets: {met}/{len(goal_targets)} met" + (f" ({len(decided)} close call(s) decided by {a.pairs} "
              "pairs of runs of goal and the reference, below)" if decided else ""))
        for line in decided:
            print(line)
        for t in goal_targets:
            if not t["ok"]:
                print(f"  MISSED  {t['lib']}: {t['target']} (got {C.fmt_num(t['value'])}{t['unit']})")
    print(f"{len(runs)} runs" + (f" and {len(paired_runs)} paired runs" if paired_runs else "") + f" in {elapsed:.0f} s")

    result = {
        "benchmark": "p2p",
        "noise": kind,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "machine": machine,
        "binding": binding,
        "libraries": libinfo,
        "targets": targets,
        "summary": summarize(selected),
        "summary_all_states": summarize(rows),
        "runs": runs,
        "paired_runs": paired_runs,
        "rows": rows,
        "notes": notes,
        "table": text,
    }
    title = (f"goal point-to-point vs MPI — {machine['hostname']}, {machine['nproc']} CPUs, "
             f"{time.strftime('%Y-%m-%d')}, median of {a.rounds} round(s)" + (" [quick]" if a.quick else "")
             + (f", noise: {kind}" if kind != "none" else ""))
    foot = (f"2 ranks on one machine; binding: {binding}. Bands: min..max over rounds. "
            + (f"Core-to-core cache-line latency {C.median(c2cs):.0f} ns. " if c2cs else "")
            + "; ".join(dict.fromkeys(C.short_version(libinfo[l]["version"]) for l in libs
                                      if libinfo.get(l, {}).get("version"))))
    png = Path(f"{out}{N.suffix(kind)}.png")
    if plot(ix, libs, targets, png, title, foot, kind):
        print(f"wrote {png}")

    rc = 0
    goal_fail = [(c, r) for c, r in failures if c.kind == "goal"]
    if goal_fail:
        print(f"ERROR: goal failed in {len(goal_fail)} run(s):", file=sys.stderr)
        for c, r in goal_fail[:3]:
            print(f"  {c.name}: {r.describe()}", file=sys.stderr)
        rc = 1
    if a.strict and any(t["ok"] is False for t in targets):
        rc = 1
    return result, rc


if __name__ == "__main__":
    sys.exit(main())
