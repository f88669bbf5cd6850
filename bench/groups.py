#!/usr/bin/env python3
"""Groups and half precision: goal beside Open MPI and MPICH on this machine.

    python3 bench/groups.py --prefix DIR [--out results/groups] [--quick] [--rounds N] [--ranks 2,4]
    goal bench groups [ARGS...]                   # the same, through the goal command

The measurement issue 40's "Done when" asks for, in one run, all libraries interleaved in
rounds (bench/coll.py's harness: idle-machine waiting, core-to-core probes, repeated
disturbed runs, medians over the rounds that were clean for every library):

1. group creation: GOAL_Group_split(world, rank / 2, rank) + GOAL_Group_free against
   MPI_Comm_split + MPI_Comm_free ("split"), and GOAL_Group_create of the rank's pair
   against MPI_Comm_create_group ("create"; each pair on its own);
2. collectives on a sub-group of 2 of 4 ranks (the world split into {0,1} and {2,3}, both
   halves at once: "sub") and on the world ("world"): allreduce (float32 sum), allgather,
   alltoall and bcast at 8 B, 64 KiB and 1 MiB per rank; goal's AUTO persistent schedules
   (GOAL_Xxx_init_on) against MPI's blocking, nonblocking and persistent calls on the split
   communicator, the best MPI setting being the fastest of all; allgatherv and alltoallv
   (equal counts) as soon as the installed goal.h declares GOAL_Allgatherv_init_on /
   GOAL_Alltoallv_init_on (the MPIs run them too then; --colls asks for them explicitly);
3. half precision: allreduce SUM of 1 MiB of binary16 and of bfloat16 in goal, beside goal's
   binary32 allreduce of as many elements, and MPI's MPIX_C_FLOAT16 where mpi.h defines it
   (MPICH 4.0 does, Open MPI 4.1 does not; MPICH runs it in a run of its own, "mpich-f16",
   since Debian's MPICH 4.0.2 aborts in it: the report says so), with MPI_FLOAT beside it.

Sub-group points run at 4 ranks (any even count >= 4); at 2 ranks creation, the world
collectives and half precision. The programs: bench/goal_groups.c and bench/mpi_groups.c
(built with each MPI), their method, data checks and rows in bench/groups_common.h. Every
point is checked once with known data after its timed loop; a wrong result is reported and
left out of the summary (goal's: exit status 1).

Issue 40's targets (allgatherv and alltoallv, on the world and the sub-group) that goal
meets by less than 5 % or misses are measured again, as bench/coll.py does: in --pairs pairs
of back-to-back runs of just that point, goal's AUTO and the MPI setting the rounds picked
(goal first in every other pair); the median over the pairs of goal/MPI decides, either way,
and the report gives both verdicts.

Writes OUT.json (machine, commands, every row, the summary, notes, the table) and OUT.png,
and prints the tables with the ratios goal / best MPI setting.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import coll  # noqa: E402  (the harness: Config, run_once, run_all, select_runs)

KiB, MiB = 1 << 10, 1 << 20
COLLS = ["allreduce", "allgather", "alltoall", "bcast", "allgatherv", "alltoallv"]
BASE_COLLS = COLLS[:4]
# collective -> the goal.h function whose presence lets it run, and the flag the program wants
V_COLLS = {"allgatherv": ("GOAL_Allgatherv_init_on", "-DGOAL_BENCH_HAVE_ALLGATHERV"),
           "alltoallv": ("GOAL_Alltoallv_init_on", "-DGOAL_BENCH_HAVE_ALLTOALLV")}
CREATES = ["split", "create"]
DTYPES = ["f16", "bf16", "f32"]
DT_LABEL = {"f16": "binary16", "bf16": "bfloat16", "f32": "binary32"}
MPI_LIBS = ("openmpi", "openmpi-nosc", "mpich", "mpich-f16")
VAR_SHORT = {"blocking": "b", "nonblocking": "nb", "persistent": "p"}
DEPS = ["p2p_common.h", "separator.h", "groups_common.h", "mpi_persistent.h"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--prefix", type=Path, help="goal install prefix (make install PREFIX=DIR)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "groups"),
                    help="output path without extension (default: results/groups)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: one round, a few iterations per point (2 ms budget), no idle wait, no "
                         "CPU-state probes")
    ap.add_argument("--rounds", type=int, help="runs of each configuration, interleaved (default 3, quick 1)")
    ap.add_argument("--ranks", default="2,4", help="comma list of rank counts (default 2,4)")
    ap.add_argument("--tests", default="create,coll,half", help="comma list of create, coll, half (default all)")
    ap.add_argument("--colls", default="", help="comma list of collectives (default: allreduce, allgather, "
                    "alltoall, bcast, and allgatherv, alltoallv where goal has them)")
    ap.add_argument("--sizes", default="", help="comma list of bytes per rank, K/M suffixes (default 8,64K,1M)")
    ap.add_argument("--half-elems", type=int, help="elements of the half-precision allreduce (default 524288: 1 MiB)")
    ap.add_argument("--no-goal", action="store_true", help="skip goal (the MPIs only)")
    ap.add_argument("--libs", default="", help="comma list: run only these library names "
                    "(goal, openmpi, openmpi-nosc, mpich, mpich-f16)")
    ap.add_argument("--variants", default="blocking,nonblocking,persistent", help="MPI variants (default all three)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin ranks (no binding at all)")
    ap.add_argument("--budget-ms", type=float, help="measuring time per point and run (default 40, quick 2)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--wait-idle", type=float, help="wait up to this many seconds for an idle machine before "
                    "each run (default 15, quick 0)")
    ap.add_argument("--retries", type=int, help="repeat a disturbed run up to N times (default 2, quick 0)")
    ap.add_argument("--oversubscribed-mpich-rounds", type=int, default=1,
                    help="rounds in which MPICH runs with more ranks than CPUs (it stalls for milliseconds "
                         "there; default 1)")
    ap.add_argument("--all-states", action="store_true", help="summarize every run, also those in a slow "
                    "core-to-core state")
    ap.add_argument("--separator", choices=("shm", "own"), default="shm",
                    help="what comes before the iterations that need it (bcast on the world, every sub-group "
                         "point, the creation from a list): shm (default, bench/separator.h) or each library's "
                         "own world barrier")
    ap.add_argument("--pairs", type=int, help="close calls of issue 40's targets (goal within 5%% of the bound, "
                    "or past it) are measured again in this many pairs of back-to-back runs of goal and the best "
                    "MPI setting, which decide them (default 6, quick 0)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    a = ap.parse_args()
    if not a.no_goal and a.prefix is None:
        ap.error("--prefix DIR is required (or --no-goal)")
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.wait_idle = a.wait_idle if a.wait_idle is not None else (0 if a.quick else 15)
    a.retries = a.retries if a.retries is not None else (0 if a.quick else 2)
    a.probe = not a.quick  # the CPU-state probes (bench/c2c.c) take seconds per run
    a.pairs = a.pairs if a.pairs is not None else (0 if a.quick else 6)
    a.ranks = [int(x) for x in a.ranks.split(",") if x.strip()]
    return a


def program_args(a) -> list[str]:
    args = ["--tests", a.tests, "--colls", a.colls, "--variants", a.variants]
    args += ["--quick"] if a.quick else []
    args += [] if a.no_pin else ["--pin"]
    args += ["--sizes", a.sizes] if a.sizes else []
    args += ["--half-elems", str(a.half_elems)] if a.half_elems else []
    args += ["--budget-ms", str(a.budget_ms)] if a.budget_ms is not None else []
    args += ["--sep-file", C.SEP_FILE] if a.separator == "shm" else []
    return args


def defines_float16(mpi: C.MPI) -> bool:
    """Whether this MPI's mpi.h defines MPIX_C_FLOAT16 (by its preprocessor)."""
    src = C.BUILD / "mpi_float16_probe.c"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("#include <mpi.h>\n")
    r = C.run([mpi.mpicc, "-dM", "-E", src], timeout=60)
    return r.ok and "MPIX_C_FLOAT16" in r.stdout


def build_and_configure(a):
    configs, libinfo, notes = [], {}, []
    deps = [C.BENCH / d for d in DEPS]
    goal_has = set(BASE_COLLS)
    if not a.no_goal:
        try:
            goal = C.find_goal(a.prefix)
            header = (goal.prefix / "include" / "goal.h").read_text()
            flags = []
            for name, (fn, flag) in V_COLLS.items():
                if fn in header:
                    goal_has.add(name)
                    flags.append(flag)
                else:
                    notes.append(f"{name}: not measured by default: this goal.h has no {fn}")
            g = dataclasses.replace(goal, cflags=goal.cflags + flags)
            exe = C.build_goal_program(g, C.BENCH / "goal_groups.c", C.BUILD / "goal_groups", deps)
        except C.BenchError as e:
            C.die(f"goal: {e}")
        libinfo["goal"] = {"prefix": str(goal.prefix), "version": goal.version,
                           "collectives": sorted(goal_has, key=COLLS.index)}
    if not a.colls:
        a.colls = ",".join(c for c in COLLS if c in goal_has)
    pargs = program_args(a)
    if not a.no_goal:
        for n in a.ranks:
            configs.append(coll.Config("goal", "goal", n, [str(goal.goalrun), "-n", str(n), str(exe),
                                                           "--name", "goal", *pargs]))
    for name, (mpi, exe) in C.build_with_each_mpi(C.BENCH / "mpi_groups.c", "mpi_groups", deps).items():
        f16 = defines_float16(mpi)
        libinfo[name] = {"mpicc": mpi.mpicc, "mpirun": mpi.mpirun, "float16": f16}
        variants = [(name, {}, [])]
        if name == "openmpi":
            variants.append(("openmpi-nosc", {"btl_vader_single_copy_mechanism": "none"}, []))
        if f16:  # the main run leaves binary16 to a run of its own: an MPI may abort in it
            variants[0] = (name, {}, ["--dtypes", "bf16,f32"])
            if "half" in a.tests.split(","):
                variants.append((f"{name}-f16", {}, ["--tests", "half", "--dtypes", "f16"]))
        if not f16:
            notes.append(f"{name}: its mpi.h defines no MPIX_C_FLOAT16 (no 16-bit float type): no half-precision "
                         "allreduce to compare with")
        for n in a.ranks:
            for vname, mca, extra in variants:
                cmd, env = mpi.launch(n, [exe, vname, *pargs, *extra], mca=mca, bind="none")
                configs.append(coll.Config(vname, "mpi", n, cmd, env, " ".join(extra), may_fail=vname.endswith("-f16")))
    if a.libs:
        want = {x.strip() for x in a.libs.split(",") if x.strip()}
        configs = [c for c in configs if c.name in want]
    if not configs:
        C.die("nothing to run")
    return configs, libinfo, notes


# ---------------------------------------------------------------------------------------
# aggregation

def key_of(x) -> tuple:
    """A row's point and library: (ranks, test, coll, scope, dtype, bytes, lib, setting)."""
    return (x["ranks"], x["test"], x["coll"], x["scope"], x.get("dtype") or "", x["bytes"], x["lib"], x["setting"])


def summarize(rows, keep):
    """key_of -> {median_us, rounds, min_round_us, max_round_us}: the median over the kept
    rounds of each run's median; rows that failed their check are left out."""
    per: dict = {}
    for x in rows:
        if (x["lib"], x["ranks"], x["round"]) in keep and x.get("verified") is not False:
            per.setdefault(key_of(x), []).append(x["median_us"])
    return {k: {"median_us": C.median(v), "rounds": len(v), "min_round_us": min(v), "max_round_us": max(v)}
            for k, v in per.items()}


def points(summary, ranks, test):
    """(coll, scope, dtype, bytes) measured at `ranks` in `test`, in the tables' order."""
    order = {"coll": COLLS, "create": CREATES, "half": COLLS}[test]
    pts = {k[2:6] for k in summary if k[0] == ranks and k[1] == test}
    return sorted(pts, key=lambda p: (order.index(p[0]) if p[0] in order else 99, DTYPES.index(p[2])
                                      if p[2] in DTYPES else -1, p[3], p[1] == "sub"))


def best(summary, ranks, test, pt, libs):
    """(median_us, lib, setting) of the fastest of `libs` (any setting) at point pt."""
    got = [(s["median_us"], k[6], k[7]) for k, s in summary.items()
           if k[:2] == (ranks, test) and k[2:6] == pt and k[6] in libs]
    return min(got) if got else (float("nan"), None, None)


def label(lib, setting) -> str:
    short = {"openmpi": "ompi", "openmpi-nosc": "ompi-nosc", "mpich-f16": "mpich"}.get(lib, lib)
    return f"{short}:{VAR_SHORT.get(setting, setting)}" if lib else "-"


def ratio(x, y) -> str:
    return C.fmt_num(x / y, 2) if C.isnum(x) and C.isnum(y) and y > 0 else "-"


# ---------------------------------------------------------------------------------------
# report

# Issue 40's targets: goal's AUTO against the best MPI setting, on the sub-group and the world.
TARGETS = {"allgatherv": ((8, 1.2), (64 * KiB, 1.0)), "alltoallv": ((8, 1.2), (64 * KiB, 1.0))}


def evaluate(summary, ranks_list):
    """Issue 40's ratio targets (TARGETS: 8 B within the first bound, 64 KiB and up within the
    second) at every point measured, as dicts with the verdict."""
    out = []
    for n in ranks_list:
        for pt in points(summary, n, "coll"):
            c, scope, _, nb = pt
            bounds = [b for lo, b in TARGETS.get(c, ()) if (nb == lo if lo == 8 else nb >= lo)]
            g = best(summary, n, "coll", pt, ["goal"])[0]
            ref, rl, rs = best(summary, n, "coll", pt, [m for m in MPI_LIBS if m != "mpich-f16"])
            if bounds and C.isnum(g) and C.isnum(ref) and ref > 0:
                out.append({"ranks": n, "coll": c, "scope": scope, "bytes": nb, "bound": bounds[0], "value": g / ref,
                            "goal_us": g, "ref_us": ref, "ref_lib": rl, "ref_setting": rs, "ok": g / ref <= bounds[0]})
    return out


def narrowed(cfg: coll.Config, t: dict) -> coll.Config:
    """cfg's command cut down to the point of target t: its collective, size and group, goal's
    AUTO or the MPI setting the rounds picked."""
    cmd, skip = [], False
    for x in cfg.cmd:
        if skip:
            skip = False
        elif x in ("--tests", "--colls", "--sizes", "--scopes", "--variants", "--dtypes"):
            skip = True
        else:
            cmd.append(x)
    cmd += ["--tests", "coll", "--colls", t["coll"], "--sizes", str(t["bytes"]), "--scopes", t["scope"]]
    cmd += [] if cfg.kind == "goal" else ["--variants", t["ref_setting"]]
    return coll.Config(cfg.name, cfg.kind, cfg.ranks, cmd, cfg.env, cfg.note)


def duel(a, configs: list, t: dict) -> list[dict]:
    """Measures goal's AUTO and the best MPI setting of target t again, in a.pairs pairs of
    back-to-back runs of that one point (goal first in every other pair), and gives t the
    pairs' verdict: the median over pairs of goal/MPI (see bench/coll.py's duel, whose reasons
    hold here: the rounds' best MPI setting is the fastest of up to nine noisy medians, and
    each pair's two runs share the machine's state). The run records."""
    n = t["ranks"]
    g = next((c for c in configs if c.name == "goal" and c.ranks == n), None)
    m = next((c for c in configs if c.name == t["ref_lib"] and c.ranks == n), None)
    if g is None or m is None:
        return []
    what = f"{n} ranks {t['coll']} {C.fmt_bytes(t['bytes'])} {t['scope']}"
    matches = lambda cfg, x: (x.get("test") == "coll" and x.get("coll") == t["coll"]  # noqa: E731
                              and x.get("scope") == t["scope"] and x.get("bytes") == t["bytes"]
                              and x.get("setting") == ("AUTO" if cfg.kind == "goal" else t["ref_setting"]))
    return coll.run_pairs(a, t, (narrowed(g, t), narrowed(m, t)), what, label(t["ref_lib"], t["ref_setting"]),
                          matches, a.pairs)


def report(summary, ranks_list, libs, f16_state: dict, targets) -> str:
    out = []
    mpis = [m for m in MPI_LIBS if m in libs and m != "mpich-f16"]
    cols = [{"openmpi": "ompi", "openmpi-nosc": "ompi-nosc"}.get(m, m) for m in mpis]
    ncpu = os.cpu_count() or 1
    over = lambda n: f" ({n} ranks on {ncpu} CPUs: ranks share CPUs)" if n > ncpu else ""  # noqa: E731

    rows = []
    for n in ranks_list:
        for pt in points(summary, n, "create"):
            g = best(summary, n, "create", pt, ["goal"])[0]
            b, bl, bs = best(summary, n, "create", pt, mpis)
            what = ("split(world, rank/2, rank) + free" if pt[0] == "split"
                    else "create(world, pair) + free")
            rows.append([n, what] + [C.fmt_num(g)] + [C.fmt_num(best(summary, n, "create", pt, [m])[0])
                                                      for m in mpis] + [f"{C.fmt_num(b)} {label(bl, bs)}", ratio(g, b)])
    if rows:
        out.append("Group creation: us per call pair (goal GOAL_Group_split / GOAL_Group_create + GOAL_Group_free; "
                   "MPI MPI_Comm_split / MPI_Comm_create_group + MPI_Comm_free)")
        out.append(C.table(["ranks", "call", "goal"] + cols + ["best MPI", "goal/best"], rows, "rl" + "r" * (len(cols) + 3)))
        out.append("")

    for n in ranks_list:
        pts = points(summary, n, "coll")
        if not pts:
            continue
        out.append(f"Collectives, {n} ranks{over(n)}: us, median over rounds; world = all {n} ranks, sub = the "
                   "world split by rank/2 (groups of 2, every half at once); goal AUTO persistent "
                   "GOAL_Xxx_init_on; MPI columns: the best of b = blocking, nb = MPI_Ixxx+Wait, p = persistent")
        rows = []
        for pt in pts:
            c, scope, _, nb = pt
            g = best(summary, n, "coll", pt, ["goal"])[0]
            row = [c, C.fmt_bytes(nb), scope, C.fmt_num(g)]
            for m in mpis:
                v, _, st = best(summary, n, "coll", pt, [m])
                row.append(f"{C.fmt_num(v)} {VAR_SHORT.get(st, '')}" if st else "-")
            b, bl, bs = best(summary, n, "coll", pt, mpis)
            row += [f"{C.fmt_num(b)} {label(bl, bs)}", ratio(g, b)]
            t = next((t for t in targets if (t["ranks"], t["coll"], t["scope"], t["bytes"]) == (n, c, scope, nb)), None)
            paired = f" (paired {t['value']:.2f})" if t and t.get("paired", {}).get("decides") else ""
            row.append(f"<={t['bound']:g}x {'ok' if t['ok'] else 'MISS'}{paired}" if t else "")
            rows.append(row)
        out.append(C.table(["collective", "bytes", "group", "goal AUTO"] + cols + ["best MPI", "goal/best", "target"],
                           rows, "lrl" + "r" * (len(cols) + 3) + "l"))
        out.append("")

    rows = []
    for n in ranks_list:
        half = {p[2]: p for p in points(summary, n, "half")}
        f32 = best(summary, n, "half", half["f32"], ["goal"])[0] if "f32" in half else float("nan")
        for dt in DTYPES:
            pt = half.get(dt)
            if not pt:
                continue
            g = best(summary, n, "half", pt, ["goal"])[0]
            b, bl, bs = best(summary, n, "half", pt, MPI_LIBS)
            rows.append([n, DT_LABEL[dt], C.fmt_bytes(pt[3]), C.fmt_num(g), ratio(g, f32) if dt != "f32" else "1",
                         f"{C.fmt_num(b)} {label(bl, bs)}" if bl else f16_state.get(dt, "-"), ratio(g, b)])
    if rows:
        out.append("Half precision: allreduce SUM on the world, AUTO; 16-bit types 1 MiB, binary32 as many elements "
                   "(2 MiB); goal/f32 = goal's time over its binary32 allreduce of as many elements")
        out.append(C.table(["ranks", "type", "bytes", "goal", "goal/f32", "best MPI (same type)", "goal/best"], rows,
                           "rlrrrlr"))
        out.append("")
    return "\n".join(out)


def plot(summary, ranks_list, libs, path: Path, title: str, footnote: str) -> bool:
    """Per rank count: one panel per collective (time vs bytes per rank; goal and the best MPI
    setting, world solid, sub-group dashed), one of group creation and one of half precision."""
    plt = C.pyplot()
    if plt is None:
        return False
    import matplotlib.ticker as mt
    ranks_list = [n for n in ranks_list if any(k[0] == n for k in summary)]
    if not ranks_list:
        return False
    colls = [c for c in COLLS if any(k[1] == "coll" and k[2] == c for k in summary)]
    mpis = [m for m in MPI_LIBS if m in libs]
    ncol = len(colls) + 2
    fig, axes = plt.subplots(len(ranks_list), ncol, figsize=(4.2 * ncol, 4.2 * len(ranks_list)),
                             constrained_layout=True, squeeze=False)
    for ri, n in enumerate(ranks_list):
        pts = points(summary, n, "coll")
        for ci, c in enumerate(colls):
            ax = axes[ri][ci]
            sizes = sorted({p[3] for p in pts if p[0] == c})
            for scope, ls in (("world", "-"), ("sub", "--")):
                for who, libset in (("goal AUTO", ["goal"]), ("best MPI", [m for m in mpis if m != "mpich-f16"])):
                    xs, ys = [], []
                    for nb in sizes:
                        v = best(summary, n, "coll", (c, scope, "", nb) if c != "allreduce" else (c, scope, "f32", nb),
                                 libset)[0]
                        if C.isnum(v):
                            xs.append(nb)
                            ys.append(v)
                    if xs:
                        sty = C.style("goal" if who.startswith("goal") else "mpich")
                        ax.plot(xs, ys, linestyle=ls, label=f"{who}, {scope}", color=sty["color"],
                                marker=sty["marker"], linewidth=2.2 if who.startswith("goal") else 1.4)
            if sizes:
                C.bytes_axis(ax, sizes, min_step=8)
            ax.set_xlabel("bytes per rank" if c != "bcast" else "message [bytes]")
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_ylabel("time [µs]")
            ax.set_title(f"{c}, {n} ranks", fontsize=11)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
        for ax, test, what in ((axes[ri][ncol - 2], "create", "group creation"),
                               (axes[ri][ncol - 1], "half", "allreduce 1 MiB of 16-bit / as many fp32")):
            labels, vals, colors = [], [], []
            for pt in points(summary, n, test):
                for lib in ["goal"] + mpis:
                    v, _, st = best(summary, n, test, pt, [lib])
                    if C.isnum(v):
                        tag = pt[0] if test == "create" else DT_LABEL.get(pt[2], pt[2])
                        labels.append(f"{tag} {label(lib, st) if lib != 'goal' else 'goal'}")
                        vals.append(v)
                        colors.append(C.style(lib.replace("-f16", "")).get("color", "grey"))
            if not vals:
                ax.set_visible(False)
                continue
            C.log_bars(ax, labels, vals, colors, f"{what}, {n} ranks", fontsize=7)
    fig.suptitle(title, fontsize=13)
    fig.text(0.5, -0.003, footnote, ha="center", va="top", fontsize=8, wrap=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------

def failure_reason(res: C.Result) -> str:
    """The line of a failed run's output that says what went wrong (an assertion, an error)."""
    lines = [x for x in res.stderr.splitlines() + res.stdout.splitlines() if x.strip()]
    line = next((x for x in lines if "Assertion" in x), None) or next((x for x in lines if "rror" in x), None)
    return " ".join((line or res.describe(3)).split())[:240]


def main() -> int:
    a = parse_args()
    C.VERBOSE = a.verbose
    out = Path(a.out)
    out = (out if out.is_absolute() else Path.cwd() / out)
    out = out.with_suffix("") if out.suffix in (".json", ".png") else out
    machine = C.machine_info()
    ncpu = machine["nproc"] or 1
    if machine["loadavg_start"] and machine["loadavg_start"][0] > 0.5:
        C.warn(f"load average is {machine['loadavg_start'][0]:.2f} before starting: something else is running "
               f"({', '.join(C.busy_processes()) or 'see top'}); results will be noisy")
    configs, libinfo, notes = build_and_configure(a)
    libs = list(dict.fromkeys(c.name for c in configs))
    C.log(f"configurations: {', '.join(f'{c.name}/{c.ranks}' for c in configs)}; {a.rounds} round(s)")
    t0 = time.time()
    rows, runs, failures = coll.run_all(a, configs, tests=("create", "coll", "half"))
    elapsed = time.time() - t0

    for run in runs:
        meta, info = run.get("meta") or {}, libinfo.setdefault(run["lib"], {})
        for k in ("version", "persistent", "mpi_version", "float16", "allgatherv", "alltoallv"):
            if meta.get(k) not in (None, ""):
                info[k] = " ".join(str(meta[k]).split()) if isinstance(meta[k], str) else meta[k]
        for s in run.get("skips") or []:
            info.setdefault("skipped", []).append(f"{s.get('of')} {s.get('what')}: {s.get('why')}")
    for c in configs:
        info = libinfo.setdefault(c.name, {})
        info.setdefault("commands", {})[str(c.ranks)] = c.cmd
        info.update(env=c.env, kind=c.kind)
        if "skipped" in info:
            info["skipped"] = sorted(set(info["skipped"]))

    # binary16 in the MPIs: defined or not, and whether the run of its own survived
    f16_why = [f"{m}: no MPIX_C_FLOAT16" for m in ("openmpi", "mpich")
               if m in libinfo and libinfo[m].get("float16") is False]
    for c, res in failures:
        if c.name.endswith("-f16"):
            why = failure_reason(res)
            notes.append(f"{c.name[:-4]} ({c.ranks} ranks): MPI_Allreduce of MPIX_C_FLOAT16 with MPI_SUM failed: {why}")
            f16_why.append(f"{c.name[:-4]}: aborts in it, see NOTE")
    f16_state = {"f16": "none (" + "; ".join(dict.fromkeys(f16_why)) + ")" if f16_why else "-",
                 "bf16": "none (no MPI has bfloat16)"}

    keep, state_note = coll.select_runs(runs, a.all_states)
    summary = summarize(rows, keep)
    targets = evaluate(summary, a.ranks)
    close = [t for t in targets if C.isnum(t["value"]) and t["value"] > 0.95 * t["bound"]] if a.pairs > 0 else []
    paired_runs = []
    if close:
        C.log(f"{len(close)} close call(s): measuring each again in {a.pairs} pairs of runs")
    for t in close:
        paired_runs += duel(a, configs, t)
    text = report(summary, a.ranks, libs, f16_state, targets)
    notes.insert(0, state_note)
    dist = [f"{r['lib']}/{r['ranks']}#{r['round'] + 1} ({r['foreign_pct']}%)" for r in runs if r.get("disturbed")]
    if dist:
        notes.append(f"{len(dist)} of {len(runs)} runs shared the CPUs with other processes: {', '.join(dist)}")
    if (nt := C.cpu_ratio_note(runs)):
        notes.append(nt)
    for n in a.ranks:
        if n > ncpu:
            notes.append(f"{n} ranks on {ncpu} CPUs: ranks share CPUs (MPICH there in {a.oversubscribed_mpich_rounds} "
                         "round(s) only: it stalls for milliseconds when oversubscribed)")
    for lib, info in libinfo.items():
        for s in info.get("skipped", []) if not lib.endswith("-f16") else []:  # its own run's: said above
            if "MPIX_C_FLOAT16" not in s:
                notes.append(f"{lib}: skipped {s}")
    wrong = sorted({(x["lib"], x["ranks"], x["test"], x["coll"], x["scope"], x.get("dtype", ""), x["bytes"],
                     x["setting"]) for x in rows if x.get("verified") is False})
    if wrong:
        notes.append(f"{len(wrong)} point(s) gave WRONG RESULTS in their check and are left out: "
                     + "; ".join("/".join(str(v) for v in w if v != "") for w in wrong[:20]))
    machine["loadavg_end"] = C.loadavg()

    print()
    print(text)
    binding = "none (no pinning)" if a.no_pin else "rank r pinned to CPU r % ncpus by the program (launcher binding off)"
    print(f"machine: {machine['hostname']}, {ncpu} CPUs ({machine['cpu_model']}); binding: {binding}")
    for lib in libs:
        if libinfo.get(lib, {}).get("version"):
            print(f"{lib}: {C.short_version(libinfo[lib]['version'])}")
    for nt in notes:
        print(f"NOTE: {nt}")
    if targets:
        paired = [t for t in targets if "paired" in t]
        print(f"targets (issue 40: allgatherv, alltoallv within 1.2x of the best MPI setting at 8 B, no slower from "
              f"64 KiB): {sum(t['ok'] for t in targets)}/{len(targets)} met"
              + (f" ({len(paired)} close call(s) decided by {a.pairs} pairs of runs of goal and the best MPI "
                 "setting, below)" if paired else ""))
        for t in paired:
            p, rv = t["paired"], t["rounds_verdict"]
            print(f"  paired  {t['ranks']} ranks {t['coll']} {C.fmt_bytes(t['bytes'])} {t['scope']}: "
                  + (f"{t['value']:.3f}x (goal faster in {p['goal_faster']} of {len(p['pairs'])} pairs; "
                     if p["decides"] else f"too few clean pairs ({len(p['pairs'])}); ")
                  + f"vs {label(t['ref_lib'], t['ref_setting'])}), {'ok' if t['ok'] else 'MISS'}; "
                  f"the rounds said {rv['value']:.3f}x, {'ok' if rv['ok'] else 'MISS'}")
    print(f"{len(runs)} runs in {elapsed:.0f} s" + (" [quick: a smoke test, not a measurement]" if a.quick else ""))

    result = {
        "benchmark": "groups",
        "method": "thesis 6.5 per-iteration times on every rank, mean over all ranks of the world per iteration, "
                  "median over iterations; a separator before bcast on the world, every sub-group point and the "
                  "creation from a list; summary: median over the rounds clean for every library "
                  "(bench/groups_common.h, bench/groups.py)",
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "machine": machine,
        "binding": binding,
        "libraries": libinfo,
        "targets": targets,
        "summary": [dict(zip(("ranks", "test", "coll", "scope", "dtype", "bytes", "lib", "setting"), k), **v)
                    for k, v in sorted(summary.items(), key=lambda kv: tuple(str(x) for x in kv[0]))],
        "runs": runs,
        "paired_runs": paired_runs,
        "rows": rows,
        "notes": notes,
        "table": text,
    }
    C.write_json(out.with_suffix(".json"), result)
    title = (f"goal groups and half precision vs MPI — {machine['hostname']}, {ncpu} CPUs, "
             f"{time.strftime('%Y-%m-%d')}, median of {a.rounds} round(s)" + (" [quick]" if a.quick else ""))
    foot = ("Thesis 6.5 method: time per iteration on every rank, mean over the world's ranks, median over "
            "iterations. sub = world split by rank/2, both halves at once. MPI: best of blocking, non-blocking, "
            "persistent. " + "; ".join(dict.fromkeys(C.short_version(libinfo[l]["version"]) for l in libs
                                                      if libinfo.get(l, {}).get("version"))))
    if plot(summary, a.ranks, libs, out.with_suffix(".png"), title, foot):
        print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    else:
        print(f"wrote {out.with_suffix('.json')}")
    rc = 0
    goal_wrong = [w for w in wrong if w[0] == "goal"]
    if goal_wrong:
        print(f"ERROR: goal gave wrong results at {len(goal_wrong)} point(s)", file=sys.stderr)
        rc = 1
    for c, r in failures:
        if c.kind == "goal":
            print(f"ERROR: goal failed ({c.ranks} ranks): {r.describe()}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
