#!/usr/bin/env python3
"""goal sim's prediction against goal run: the same schedules, calibrated on this machine.

    python3 bench/predict.py --prefix DIR [--out results/predict] [--quick]
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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--prefix", type=Path, required=True, help="goal install prefix (bin/goal, bin/goalrun)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "predict"), help="output path without extension")
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 and 4 ranks, 8 B, few iterations")
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
    return a


def num_ranks(path: Path) -> int | None:
    with open(path, errors="replace") as f:
        for line in f:
            if line.strip().startswith("num_ranks"):
                return int(line.split()[1])
    return None


def measured_run(a, f: Path, n: int, work: Path) -> float | None:
    """The median makespan (ns) of `goal run f` on n ranks, or None."""
    j = work / "run.json"
    r = C.run([a.goalrun, "-n", str(n), "--", a.goal, "run", "--iterations", str(a.iterations), "--warmup", "3",
               "--json", j, f], timeout=a.timeout)
    if not r.ok:
        C.warn(f"goal run {f.name} on {n} ranks: {r.describe()}")
        return None
    doc = json.loads(j.read_text())
    per = [row["finish"] for row in doc["per_rank"]]
    spans = [max(col) for col in zip(*per)]
    return C.median(spans) * 1e9


def predicted(a, f: Path, params: Path, work: Path) -> float | None:
    j = work / "sim.json"
    r = C.run([a.goal, "sim", "-b", "--params", params, "--json", j, f], timeout=a.timeout)
    if not r.ok:
        C.warn(f"goal sim {f.name}: {r.describe()}")
        return None
    return float(json.loads(j.read_text())["max"]["ns"])


def main() -> int:
    a = parse_args()
    work = Path(tempfile.mkdtemp(prefix="goal-bench-predict-"))
    out = Path(a.out)
    cores = os.cpu_count() or 1
    points = []
    try:
        params = work / "shm.json"
        C.log("calibrating: goalrun -n 2 goal calibrate --loggops")
        cal = C.run([a.goalrun, "-n", "2", "--", a.goal, "calibrate", "--loggops", "--out", params], timeout=a.timeout)
        if not cal.ok:
            C.die(f"goal calibrate failed: {cal.describe()}")
        print(cal.stdout, end="")
        calibration = json.loads(params.read_text())
        files = []
        for f in sorted((C.REPO / "tests" / "goal-corpus").glob("*.g*")):
            n = num_ranks(f)
            if n and n <= a.max_ranks and f.name != "htsim-chained_1.goal" and "src_schedgen_schedule" not in f.name:
                files.append(("corpus", f.name, f, n, None))
        sizes = [8] if a.quick else [8, 65536]
        ranks = [r for r in ([2, 4] if a.quick else [2, 4, 8]) if r <= a.max_ranks]
        for coll in COLLS:
            for n in ranks:
                for b in sizes:
                    f = work / f"{coll}-{n}-{b}.goal"
                    e = C.run([a.goal, "export", "--coll", coll, "--ranks", str(n), "--bytes", str(b), "-o", f], timeout=a.timeout)
                    if not e.ok:
                        C.warn(f"goal export {coll}: {e.describe()}")
                        continue
                    files.append(("goal", f"{coll} (auto)", f, n, b))
        for kind, name, f, n, b in files:
            C.log(f"{name}, {n} ranks{'' if b is None else f', {b} B'}")
            run_ns = measured_run(a, f, n, work)
            sim_ns = predicted(a, f, params, work)
            err = None if not run_ns or sim_ns is None else (sim_ns - run_ns) / run_ns
            points.append({"kind": kind, "name": name, "ranks": n, "bytes": b, "run_ns": run_ns, "sim_ns": sim_ns,
                           "error": err, "oversubscribed": n > cores})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [[p["kind"], p["name"], p["ranks"], "" if p["bytes"] is None else C.fmt_bytes_short(p["bytes"]),
             C.fmt_num(p["run_ns"] / 1e3) if p["run_ns"] else "-", C.fmt_num(p["sim_ns"] / 1e3) if p["sim_ns"] is not None else "-",
             f"{p['error'] * 100:+.0f}%" if p["error"] is not None else "-", "yes" if p["oversubscribed"] else ""]
            for p in points]
    print(C.table(["source", "schedule", "ranks", "bytes", "run us", "sim us", "error", "ranks > cores"], rows, "llrrrrrl"))
    fair = [abs(p["error"]) for p in points if p["error"] is not None and not p["oversubscribed"]]
    summary = {"median_abs_error_ranks_within_cores": C.median(fair) if fair else None, "points_within_cores": len(fair)}
    if fair:
        print(f"median |error| with a core per rank: {summary['median_abs_error_ranks_within_cores'] * 100:.0f}% over {len(fair)} points")
    C.write_json(out.with_suffix(".json"), {"machine": C.machine_info(), "calibration": calibration, "points": points,
                                            "summary": summary, "iterations": a.iterations})
    plot(points, out.with_suffix(".png"))
    return 0


def plot(points: list[dict], path: Path) -> None:
    plt = C.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 5))
    for over, marker, label in ((False, "o", "a core per rank"), (True, "x", "more ranks than cores")):
        pts = [(p["run_ns"] / 1e3, p["sim_ns"] / 1e3) for p in points
               if p["run_ns"] and p["sim_ns"] and p["oversubscribed"] == over]
        if pts:
            ax.scatter([x for x, _ in pts], [y for _, y in pts], marker=marker, label=label)
    lo, hi = 0.1, 1e5
    ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("goal run: measured makespan (us, median)")
    ax.set_ylabel("goal sim: predicted (us)")
    ax.set_title("goal sim with goal calibrate's parameters vs goal run", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    C.log(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
