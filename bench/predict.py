#!/usr/bin/env python3
"""goal sim's prediction against goal run: the same schedules, calibrated on this machine.

    python3 bench/predict.py --prefix DIR [--out results/predict] [--quick]
    python3 bench/predict.py --prefix DIR --cluster    # (root) -> results/predict_cluster.*
    goal bench predict [ARGS...]                 # the same, through the goal command

Issue 42's point 5: `goal calibrate --loggops` measures L, o, g, G, O and S between two
ranks here (shared memory; `goalrun -n 2`, ranks bound as goalrun binds them), then every
schedule is both run for real (`goalrun -n N goal run FILE --json`, the median over the
iterations of the latest rank's finish) and simulated with those parameters
(`goal sim --params`), and the table gives the prediction error, (sim - run) / run.

Schedules: the corpus files of at most --max-ranks ranks (tests/goal-corpus) that goal run
runs, and goal's own collectives written by `goal export` (barrier, bcast, allreduce,
allgather, alltoall, each AUTO's choice) at 2, 4 and 8 ranks, at 8 B and 64 KiB.
Ranks beyond the machine's cores are marked: LogGOPS gives every rank a CPU of its own,
which 4 or 8 ranks on 2 cores do not have, so there the model predicts a machine this is not.

With --cluster (root): the same across an emulated cluster (goal-cluster, crates/goal-netns:
network namespaces, one rail per host at --rate, 1 Gbit/s by default). The calibration is
`goal calibrate --loggops` between two emulated hosts (TCP), and every run is a job of goal-cluster's
Open MPI mpirun (GOAL_RAILS=rail0) at 2, 4 and 8 ranks, one or two per host (2x1, 4x1, 2x2, 8x1,
4x2: hosts x ranks per host); the corpus files of 2 to 8 ranks run one rank per host. With two
ranks per host, ranks on one host talk through shared memory, which the TCP parameters do not
describe: those points are marked. The hosts share this machine's cores, so only 2x1 has a core
per rank.

The summary judges three groups apart (OUT.json's "summary"): "described", a CPU per rank and
one rank per host (what LogGOPS describes: locally 2 ranks, across hosts 2x1 and the corpus
files of 2 ranks); "oversubscribed", more ranks than CPUs, where a rank waits for a CPU as
well as for messages (the model has no parameter for that); "two_per_host", ranks that share
a host and talk through shared memory, which the TCP parameters do not describe.

Writes OUT.json (the calibration, every point) and OUT.png (predicted against measured).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

COLLS = ["barrier", "bcast", "allreduce", "allgather", "alltoall"]
# --cluster: (ranks, ranks per host), every layout of 2, 4 and 8 ranks on 2 hosts or more.
CLUSTER_LAYOUTS = [(2, 1), (4, 1), (4, 2), (8, 1), (8, 2)]
CLUSTER_QUICK = [(2, 1), (4, 2)]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--prefix", type=Path, required=True, help="goal install prefix (bin/goal, bin/goalrun)")
    ap.add_argument("--out", help="output path without extension (default results/predict, "
                    "cluster results/predict_cluster)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 and 4 ranks, 8 B, few iterations "
                    "(cluster: 2x1 and 2x2, two corpus files, a short calibration)")
    ap.add_argument("--cluster", action="store_true", help="across emulated hosts (root; goal-cluster): "
                    "calibrate over TCP between two hosts, run 2, 4 and 8 ranks at one and two per host")
    ap.add_argument("--rate", default="1gbit", help="cluster: each host's rail, as tc writes rates, or none "
                    "(default 1gbit)")
    ap.add_argument("--cluster-tool", type=Path, help="the goal-cluster binary (default $CARGO_TARGET_DIR or "
                    "target/, release/goal-cluster, built if missing)")
    ap.add_argument("--corpus", type=Path, default=C.REPO / "tests" / "goal-corpus",
                    help="the GOAL text corpus (default the source tree's tests/goal-corpus)")
    ap.add_argument("--max-ranks", type=int, default=8, help="largest job (default 8)")
    ap.add_argument("--iterations", type=int, help="goal run iterations per point (default 50, quick 5)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per command (default 300)")
    a = ap.parse_args()
    a.goal = a.prefix / "bin" / "goal"
    a.goalrun = a.prefix / "bin" / "goalrun"
    for p in (a.goal, a.goalrun):
        if not p.exists():
            ap.error(f"{p} does not exist (make install PREFIX=...)")
    a.iterations = a.iterations or (5 if a.quick else 50)
    a.out = a.out or str(C.REPO / "results" / ("predict_cluster" if a.cluster else "predict"))
    if a.cluster and os.geteuid() != 0:
        ap.error("--cluster needs root (network namespaces, see crates/goal-netns)")
    if not a.corpus.is_dir():
        C.warn(f"{a.corpus} is not a directory: no corpus files (--corpus names another)")
    return a


class Launcher:
    """Starts jobs: under goalrun on this machine, or under goal-cluster's mpirun across
    emulated hosts (`up` builds the cluster, `down` removes it)."""

    def __init__(self, a):
        self.a = a
        self.tool = C.cluster_tool(a.cluster_tool) if a.cluster else None
        self.name = f"pr{os.getpid() % 100000}"

    def up(self, hosts: int) -> None:
        if self.tool:
            self.down()
            C.log(f"goal-cluster up --name {self.name} --hosts {hosts} --rails 1 --rate {self.a.rate}")
            C.run([self.tool, "up", "--name", self.name, "--hosts", str(hosts), "--rails", "1", "--rate",
                   self.a.rate], timeout=120, check=True)

    def down(self) -> None:
        if self.tool:
            C.run([self.tool, "down", "--name", self.name], timeout=60)

    def job(self, n: int, per_host: int | None, prog: list) -> list:
        if not self.tool:
            return [self.a.goalrun, "-n", str(n), "--", *prog]
        return [self.tool, "mpirun", "--name", self.name, "--np", str(n), "--per-host", str(per_host),
                "--rails", "0", "--", "-x", "GOAL_RAILS=rail0", *prog]


def num_ranks(path: Path) -> int | None:
    with open(path, errors="replace") as f:
        for line in f:
            if line.strip().startswith("num_ranks"):
                return int(line.split()[1])
    return None


def measured_run(a, jobs: Launcher, f: Path, n: int, per_host: int | None, work: Path) -> float | None:
    """The median makespan (ns) of `goal run f` on n ranks (per_host a host), or None."""
    j = work / "run.json"
    j.unlink(missing_ok=True)
    r = C.run(jobs.job(n, per_host, [a.goal, "run", "--iterations", str(a.iterations), "--warmup", "3",
                                     "--json", j, f]), timeout=a.timeout)
    if not r.ok or not j.exists():
        C.warn(f"goal run {f.name} on {n} ranks{layout(n, per_host)}: {r.describe()}")
        return None
    doc = json.loads(j.read_text())
    per = [row["finish"] for row in doc["per_rank"]]
    spans = [max(col) for col in zip(*per)]
    return C.median(spans) * 1e9


def layout(n: int, per_host: int | None) -> str:
    return "" if per_host is None else f" ({n // per_host}x{per_host})"


def predicted(a, f: Path, params: Path, work: Path) -> float | None:
    j = work / "sim.json"
    r = C.run([a.goal, "sim", "-b", "--params", params, "--json", j, f], timeout=a.timeout)
    if not r.ok:
        C.warn(f"goal sim {f.name}: {r.describe()}")
        return None
    return float(json.loads(j.read_text())["max"]["ns"])


def schedules(a, work: Path) -> list[tuple]:
    """(kind, name, file, ranks, bytes, ranks per host or None) for every point."""
    files = []
    corpus = sorted(a.corpus.glob("*.g*")) if a.corpus.is_dir() else []
    for f in corpus:
        n = num_ranks(f)
        if n and n <= a.max_ranks and f.name != "htsim-chained_1.goal" and "src_schedgen_schedule" not in f.name:
            if not a.cluster:
                files.append(("corpus", f.name, f, n, None, None))
            elif n >= 2 and (not a.quick or len(files) < 2):
                files.append(("corpus", f.name, f, n, None, 1))
    sizes = [8] if a.quick else [8, 65536]
    if a.cluster:
        layouts = [(n, p) for n, p in (CLUSTER_QUICK if a.quick else CLUSTER_LAYOUTS) if n <= a.max_ranks]
    else:
        layouts = [(n, None) for n in ([2, 4] if a.quick else [2, 4, 8]) if n <= a.max_ranks]
    for coll in COLLS:
        for n, per_host in layouts:
            for b in sizes:
                f = work / f"{coll}-{n}-{b}.goal"
                if not f.exists():
                    e = C.run([a.goal, "export", "--coll", coll, "--ranks", str(n), "--bytes", str(b), "-o", f],
                              timeout=a.timeout)
                    if not e.ok:
                        C.warn(f"goal export {coll}: {e.describe()}")
                        continue
                files.append(("goal", f"{coll} (auto)", f, n, b, per_host))
    return files


def calibrate(a, jobs: Launcher, params: Path) -> dict:
    where = "between two emulated hosts (TCP)" if a.cluster else "goalrun -n 2 (shared memory)"
    C.log(f"calibrating: goal calibrate --loggops, {where}")
    reps = ["--reps", "60"] if a.quick and a.cluster else []
    cal = C.run(jobs.job(2, 1, [a.goal, "calibrate", "--loggops", *reps, "--out", params]), timeout=a.timeout)
    if not cal.ok or not params.exists():
        C.die(f"goal calibrate failed: {cal.describe()}")
    print(cal.stdout, end="")
    return json.loads(params.read_text())


def main() -> int:
    a = parse_args()
    work = Path(tempfile.mkdtemp(prefix="goal-bench-predict-"))
    out = Path(a.out)
    cores = os.cpu_count() or 1
    points = []
    jobs = Launcher(a)
    try:
        files = schedules(a, work)
        jobs.up(max([2] + [n // p for _, _, _, n, _, p in files if p]))
        params = work / "params.json"
        calibration = calibrate(a, jobs, params)
        for kind, name, f, n, b, per_host in files:
            C.log(f"{name}, {n} ranks{layout(n, per_host)}{'' if b is None else f', {b} B'}")
            run_ns = measured_run(a, jobs, f, n, per_host, work)
            sim_ns = predicted(a, f, params, work)
            err = None if not run_ns or sim_ns is None else (sim_ns - run_ns) / run_ns
            points.append({"kind": kind, "name": name, "ranks": n, "bytes": b, "run_ns": run_ns, "sim_ns": sim_ns,
                           "error": err, "oversubscribed": n > cores, "per_host": per_host,
                           "hosts": None if per_host is None else n // per_host})
    except C.BenchError as e:
        C.die(str(e))
    finally:
        jobs.down()
        shutil.rmtree(work, ignore_errors=True)
    rows = [[p["kind"], p["name"], p["ranks"] if p["per_host"] is None else f"{p['hosts']}x{p['per_host']}",
             "" if p["bytes"] is None else C.fmt_bytes_short(p["bytes"]),
             C.fmt_num(p["run_ns"] / 1e3) if p["run_ns"] else "-", C.fmt_num(p["sim_ns"] / 1e3) if p["sim_ns"] is not None else "-",
             f"{p['error'] * 100:+.0f}%" if p["error"] is not None else "-", "yes" if p["oversubscribed"] else ""]
            for p in points]
    print(C.table(["source", "schedule", "ranks" if not a.cluster else "hosts x ranks", "bytes", "run us", "sim us",
                   "error", "ranks > cores"], rows, "llrrrrrl"))
    # Judged apart: the points the model describes (a CPU per rank and, across hosts, every
    # pair of ranks on the network the parameters describe), those with more ranks than CPUs
    # (LogGOPS gives every rank a CPU of its own), and, across hosts, two ranks per host.
    groups = {}
    for p in points:
        if p["error"] is not None:
            groups.setdefault(judged(p), []).append(abs(p["error"]))
    summary = {}
    for key, label in JUDGED:
        errs = groups.get(key, [])
        summary[key] = {"label": label, "points": len(errs), "median_abs_error": C.median(errs) if errs else None}
        if errs:
            print(f"median |error|, {label}: {C.median(errs) * 100:.0f}% over {len(errs)} points")
    every = [e for errs in groups.values() for e in errs]
    summary["all"] = {"label": "every point", "points": len(every), "median_abs_error": C.median(every) if every else None}
    if every:
        print(f"median |error| over every point: {C.median(every) * 100:.0f}% over {len(every)} points")
    setup = {"cluster": a.cluster, "rate_per_host": a.rate if a.cluster else None,
             "calibrated": "TCP between two emulated hosts" if a.cluster else "shared memory, goalrun -n 2"}
    C.write_json(out.with_suffix(".json"), {"machine": C.machine_info(), "setup": setup, "calibration": calibration,
                                            "points": points, "summary": summary, "iterations": a.iterations})
    plot(points, out.with_suffix(".png"), a.cluster)
    return 0


# The summary's groups: (key, what its points are).
JUDGED = [("described", "a CPU per rank, one rank per host (what LogGOPS describes)"),
          ("oversubscribed", "more ranks than CPUs (the model gives each rank a CPU of its own)"),
          ("two_per_host", "two ranks per host (shared memory inside a host, not in the TCP parameters)")]


def judged(p: dict) -> str:
    """Which of JUDGED a point falls in."""
    if p["per_host"] == 2:
        return "two_per_host"
    return "oversubscribed" if p["oversubscribed"] else "described"


def group(p: dict) -> str:
    """A point's marker group in the plot."""
    if p["per_host"] == 2:
        return "2 ranks per host (shared memory inside a host)"
    within = "a core per rank" if not p["oversubscribed"] else "more ranks than cores"
    return within if p["per_host"] is None else f"1 rank per host, {within}"


def plot(points: list[dict], path: Path, cluster: bool) -> None:
    plt = C.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 5))
    for label, marker in zip(sorted({group(p) for p in points}), "oxs^"):
        pts = [(p["run_ns"] / 1e3, p["sim_ns"] / 1e3) for p in points
               if p["run_ns"] and p["sim_ns"] and group(p) == label]
        if pts:
            ax.scatter([x for x, _ in pts], [y for _, y in pts], marker=marker, label=label)
    lo, hi = 0.1, 1e5
    ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("goal run: measured makespan (us, median)")
    ax.set_ylabel("goal sim: predicted (us)")
    where = "emulated hosts, TCP" if cluster else "this machine"
    ax.set_title(f"goal sim with goal calibrate's parameters vs goal run ({where})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    C.log(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
