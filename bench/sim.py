#!/usr/bin/env python3
"""goal sim at scale: text to result, time and peak memory, against the number of ranks.

    python3 bench/sim.py --prefix DIR [--out results/sim] [--quick] [--ranks 1024,65536,1048576]
    goal bench sim [ARGS...]                     # the same, through the goal command

The measurement issue 42's "Done when" asks for: Schedgen's dissemination barrier and
binomial broadcast (`num_ranks N`, one `rank i {` block per rank, labels l1, l2, ...; written
by `goal export --pattern`, as Schedgen writes them) at 1,024 / 65,536 / 1,048,576 ranks,
each simulated from its text file by `goal sim -b --json` in a child process: the wall time
from start to result (reading the text and simulating), the child's peak resident memory
(getrusage: ru_maxrss), and goal sim's own split (read, simulate, events). Then one
collective over 16,777,216 ranks (goal's own binomial broadcast, built by the runtime's graph
builders: `goal sim --coll bcast --alg binomial`), within this machine's memory.

For reference, LogGOPSim (commit 76451de) took 98 s and 7.7 GB for the 1,048,576-rank
dissemination barrier, after 40 s of converting the text (txt2bin); goal's target is the whole
job in under 10 s and 2 GB.

The files are written to --work (default: a temporary directory, removed at the end unless
--keep); the 1,048,576-rank barrier is 1.6 GB. Each point runs --repeat times (default 3,
quick 1); the table shows the median run. Writes OUT.json (machine, every run, the table)
and OUT.png (events/s and peak memory against ranks).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

PATTERNS = ["dissemination", "binomial_bcast"]
BIG = 1 << 24


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--prefix", type=Path, help="goal install prefix (uses PREFIX/bin/goal)")
    ap.add_argument("--goal", type=Path, help="the goal executable (instead of --prefix)")
    ap.add_argument("--out", default=str(C.REPO / "results" / "sim"), help="output path without extension")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1,024 and 4,096 ranks, one run each, no 16M point")
    ap.add_argument("--ranks", default="", help="comma list of rank counts (default 1024,65536,1048576; K, M suffixes)")
    ap.add_argument("--big-ranks", type=int, default=BIG, help="ranks of the single large collective (default 16777216; 0: skip)")
    ap.add_argument("--bytes", type=int, default=1024, help="bytes of the broadcast's messages (default 1024)")
    ap.add_argument("--repeat", type=int, help="runs per point (default 3, quick 1)")
    ap.add_argument("--work", type=Path, help="directory for the generated files (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    a = ap.parse_args()
    if a.goal is None:
        if a.prefix is None:
            ap.error("--prefix DIR or --goal PATH is required")
        a.goal = a.prefix / "bin" / "goal"
    if not a.goal.exists():
        ap.error(f"{a.goal} does not exist")
    sizes = a.ranks or ("1024,4096" if a.quick else "1024,65536,1048576")
    a.sizes = [C.parse_size(x) for x in sizes.split(",") if x.strip()]
    a.repeat = a.repeat or (1 if a.quick else 3)
    if a.quick:
        a.big_ranks = 0
    return a


def measured(cmd: list[str], timeout: float) -> dict:
    """Runs cmd as a child: its wall time, exit status and output."""
    t0 = time.monotonic()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, err = p.communicate()
        return {"ok": False, "error": f"timed out after {timeout:.0f} s", "wall_s": time.monotonic() - t0}
    wall = time.monotonic() - t0
    return {"ok": p.returncode == 0, "rc": p.returncode, "wall_s": wall, "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace")}


def run_point(goal: Path, args: list[str], jpath: Path, timeout: float) -> dict:
    """`goal sim -b --json J ARGS` in a helper process that reports the child's own ru_maxrss."""
    helper = ("import os,resource,subprocess,sys,time,json;t=time.monotonic();"
              "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.PIPE);"
              "w=time.monotonic()-t;u=resource.getrusage(resource.RUSAGE_CHILDREN);"
              "print(json.dumps({'rc':r.returncode,'wall_s':w,'maxrss_kb':u.ru_maxrss,'user_s':u.ru_utime,"
              "'sys_s':u.ru_stime,'stderr':r.stderr.decode(errors='replace')[-2000:]}))")
    cmd = [sys.executable, "-c", helper, str(goal), "sim", "-b", "--json", str(jpath), *args]
    m = measured(cmd, timeout)
    if "stdout" not in m:
        return m
    try:
        row = json.loads(m["stdout"].strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "error": m.get("stderr", "")[-2000:]}
    row["ok"] = row["rc"] == 0
    if row["ok"]:
        sim = json.loads(jpath.read_text())
        sim.pop("finish", None)
        row["sim"] = sim
    return row


def main() -> int:
    a = parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="goal-bench-sim-"))
    work.mkdir(parents=True, exist_ok=True)
    out = Path(a.out)
    rows, notes = [], []
    try:
        points = [(pat, n) for n in a.sizes for pat in PATTERNS]
        for pat, n in points:
            f = work / f"{pat}_{n}.goal"
            gen = C.run([a.goal, "export", "--pattern", pat, "--ranks", str(n), "--bytes", str(a.bytes), "-o", f], timeout=a.timeout)
            if not gen.ok:
                C.die(f"cannot write {f}: {gen.describe()}")
            size = f.stat().st_size
            for i in range(a.repeat):
                C.log(f"{pat} {n} ranks ({size / 1e6:.1f} MB), run {i + 1}/{a.repeat}")
                r = run_point(a.goal, [str(f)], work / "out.json", a.timeout)
                r.update({"source": "text", "pattern": pat, "ranks": n, "text_bytes": size, "run": i})
                rows.append(r)
                if not r["ok"]:
                    C.warn(f"{pat} {n}: {r.get('error') or r.get('stderr')}")
            if not a.keep:
                f.unlink()
        if a.big_ranks:
            args = ["--coll", "bcast", "--alg", "binomial", "--ranks", str(a.big_ranks), "--bytes", str(a.bytes)]
            C.log(f"goal's binomial broadcast over {a.big_ranks} ranks")
            r = run_point(a.goal, args, work / "out.json", a.timeout)
            r.update({"source": "coll", "pattern": "bcast_binomial", "ranks": a.big_ranks, "text_bytes": 0, "run": 0})
            rows.append(r)
    finally:
        if not a.keep and a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    table = summarize(rows)
    text = C.table(["source", "pattern", "ranks", "text MB", "ops", "events", "read s", "sim s", "total s", "Mev/s", "peak MB"],
                   table, "llrrrrrrrrr")
    print(text)
    doc = {"machine": C.machine_info(), "goal": str(a.goal), "rows": rows, "table": table, "notes": notes,
           "targets": {"barrier_1M_total_s": 10, "barrier_1M_peak_bytes": 2e9, "big_peak_bytes": 24e9}}
    C.write_json(out.with_suffix(".json"), doc)
    plot(rows, out.with_suffix(".png"))
    return 0 if all(r["ok"] for r in rows) else 1


def summarize(rows: list[dict]) -> list[list]:
    """One line per point: the median run by total time."""
    keyed: dict = {}
    for r in rows:
        if r["ok"]:
            keyed.setdefault((r["source"], r["pattern"], r["ranks"]), []).append(r)
    out = []
    for (src, pat, n), rs in keyed.items():
        r = sorted(rs, key=lambda x: x["wall_s"])[len(rs) // 2]
        s = r["sim"]
        out.append([src, pat, n, f"{r['text_bytes'] / 1e6:.0f}", s["ops"], s["events"], f"{s['read_seconds']:.2f}",
                    f"{s['sim_seconds']:.2f}", f"{r['wall_s']:.2f}", f"{s['events'] / max(s['sim_seconds'], 1e-9) / 1e6:.1f}",
                    f"{r['maxrss_kb'] / 1024:.0f}"])
    return out


def plot(rows: list[dict], path: Path) -> None:
    plt = C.pyplot()
    if plt is None:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for pat in PATTERNS + ["bcast_binomial"]:
        runs: dict = {}
        for r in rows:
            if r["ok"] and r["pattern"] == pat:
                runs.setdefault(r["ranks"], []).append((r["sim"]["events"] / max(r["sim"]["sim_seconds"], 1e-9), r["maxrss_kb"] * 1024))
        if not runs:
            continue
        # The median of the repeated runs of each point.
        pts = [(n, C.median(e for e, _ in rs), C.median(m for _, m in rs)) for n, rs in sorted(runs.items())]
        xs = [p[0] for p in pts]
        ax1.plot(xs, [p[1] / 1e6 for p in pts], "o-", label=pat)
        ax2.plot(xs, [p[2] / 1e9 for p in pts], "o-", label=pat)
    for ax, title in ((ax1, "simulated events per second (millions)"), (ax2, "peak memory (GB), text to result")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    ax2.axhline(2, color="gray", ls="--", lw=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    C.log(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
