#!/usr/bin/env python3
"""Two builds of goal side by side: did a change make goal slower or faster?

    python3 bench/ab.py --a /tmp/before --b /tmp/after -- p2p --libs goal --no-heap
    python3 bench/ab.py --a /tmp/before --b /tmp/after --rounds 6 -- coll --ranks 2 --libs goal \\
        --goal-algs auto --sizes 8,64K,1M

A and B are install prefixes (`make install PREFIX=DIR` of each commit). The driver named after
`--` (p2p, coll, overlap) runs once per round for each, in alternating order (A B, B A, A B,
...), so that a drift of the machine (another process, the host's load) falls on both alike;
each run's own medians come from the driver's raw file through bench/summarize.py. Each build
keeps its own calibration cache (XDG_CACHE_HOME under the output directory), seeded with one
calibration for both: the machine's cache where it has one, else the one A's first run
measures (--own-calibration lets each build measure its own; two calibrations minutes apart
can choose different paths, and the A/B then compares the paths, not the builds). A point's
figure is the median over rounds of its per-run medians, and its ratio B/A is the median of the
rounds' paired ratios (a time: above 1 is B slower; a bandwidth is inverted to read the same).
This machine is shared and noisy: read a ratio against the spread printed beside it (the
paired ratios' min..max), not alone.

Writes results/ab/NAME.json (every run's medians and the ratios) and results/ab/NAME.png; the
drivers' raw files stay in results/ab/NAME-runs/.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common as C  # noqa: E402
import summarize as S  # noqa: E402

DRIVERS = ("p2p", "coll", "overlap")


def tables(summary: dict, prefix: str = ""):
    """(table name, key tuple, column, value, higher_is_better) for every number of the
    summary's median tables; a run under several --noise conditions has one summary per
    condition, whose tables are named "condition:table"."""
    for cond, sub in (summary.get("conditions") or {}).items():
        yield from tables(sub, f"{prefix}{cond}:")
    for name, t in summary.items():
        if not (isinstance(t, dict) and {"key", "columns", "rows"} <= t.keys()):
            continue
        if "median" not in name and "bandwidth" not in name:
            continue
        higher = "bandwidth" in name or "gbps" in name
        nkey = len(t["key"])
        for row in t["rows"]:
            key = tuple(row[:nkey])
            for col, v in zip(t["columns"], row[nkey:]):
                if isinstance(v, (int, float)) and v > 0:
                    yield prefix + name, key, col, float(v), higher


def quartiles(xs: list[float]) -> tuple[float, float]:
    """The first and third quartiles of `xs` (its only value, for one)."""
    if len(xs) < 2:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def user_calibration() -> Path | None:
    """The calibration cache a goal program started by this user reads (calibrate.rs's
    cache_dir), if there is one."""
    x = os.environ.get("XDG_CACHE_HOME")
    base = Path(x) if x else (Path(os.environ["HOME"]) / ".cache" if os.environ.get("HOME") else None)
    f = calibration_file(base) if base else None
    return f if f and f.is_file() else None


def calibration_file(cache: Path) -> Path:
    """The calibration file of cache directory `cache` (an XDG_CACHE_HOME)."""
    return cache / "goal" / "calibration"


def seed_calibration(src: Path, caches: list[Path]) -> None:
    """Copies calibration file `src` into each cache directory that has none yet."""
    for c in caches:
        dst = calibration_file(c)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(src.read_text())
            print(f"  calibration for {c.name}: {src}", flush=True)


def calibration_of(cache: Path) -> str:
    """What a cache's calibration file holds ("" without one)."""
    f = calibration_file(cache)
    return f.read_text() if f.exists() else ""


def run_driver(driver: str, prefix: Path, out: Path, args: list[str], cache: Path) -> dict:
    cmd = [sys.executable, str(HERE / f"{driver}.py"), "--prefix", str(prefix), "--out", str(out), *args]
    print("  $", " ".join(cmd), flush=True)
    # Each build keeps its own calibration cache: two builds of different
    # cache formats would otherwise overwrite each other's and calibrate
    # again at every start, with thresholds that differ from run to run.
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if res.returncode != 0:
        sys.exit(f"ab: {driver} failed (exit {res.returncode}) for {prefix}:\n{res.stderr[-2000:]}")
    return S.summarize(out.with_suffix(".json"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", type=Path, required=True, help="install prefix of the build before")
    ap.add_argument("--b", type=Path, required=True, help="install prefix of the build after")
    ap.add_argument("--rounds", type=int, default=5, help="runs of each build, alternating (default 5)")
    ap.add_argument("--name", help="output name (default: the driver's)")
    ap.add_argument("--out-dir", type=Path, default=C.REPO / "results" / "ab")
    ap.add_argument("--reuse", action="store_true",
                    help="summarize the runs already in NAME-runs/ instead of running them again "
                         "(after a change to the summary), running only those missing")
    ap.add_argument("--own-calibration", action="store_true",
                    help="let each build calibrate on its own (default: both run with one calibration, "
                         "the machine's cache or A's first)")
    ap.add_argument("driver", choices=DRIVERS, help="the benchmark to run")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the driver's own options")
    a = ap.parse_args()
    for p in (a.a, a.b):
        if not (p / "lib" / "libgoal.so").exists():
            ap.error(f"{p} is not a goal install prefix (no lib/libgoal.so)")
    name = a.name or a.driver
    runs_dir = a.out_dir / f"{name}-runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    per: dict[str, list[dict]] = {"A": [], "B": []}
    caches = {label: a.out_dir / f"cache-{label}" for label in per}
    if not a.own_calibration and (mine := user_calibration()):
        seed_calibration(mine, list(caches.values()))
    t0 = time.time()
    for r in range(a.rounds):
        order = [("A", a.a), ("B", a.b)] if r % 2 == 0 else [("B", a.b), ("A", a.a)]
        for label, prefix in order:
            print(f"round {r + 1}/{a.rounds}: {label}", flush=True)
            out = runs_dir / f"{label}-{r}"
            if a.reuse and out.with_suffix(".json").exists():
                per[label].append(S.summarize(out.with_suffix(".json")))
            else:
                per[label].append(run_driver(a.driver, prefix, out, a.args, caches[label]))
            other = caches["B" if label == "A" else "A"]
            if not a.own_calibration and calibration_of(caches[label]) and not calibration_of(other):
                seed_calibration(calibration_file(caches[label]), [other])
    same_calibration = calibration_of(caches["A"]) == calibration_of(caches["B"])
    if not same_calibration:
        C.warn("A and B ran with different calibrations (" + ", ".join(str(calibration_file(c)) for c in caches.values())
               + "): where they choose different paths the ratios compare those paths, not the builds")
    # Per point: the rounds' values of A and B (paired by round).
    points: dict[tuple, dict] = {}
    for label in ("A", "B"):
        for r, summ in enumerate(per[label]):
            for tname, key, col, v, higher in tables(summ):
                p = points.setdefault((tname, key, col), {"higher": higher, "A": {}, "B": {}})
                p[label][r] = v
    rows = []
    for (tname, key, col), p in sorted(points.items(), key=lambda kv: (kv[0][0], kv[0][2], str(kv[0][1]))):
        both = sorted(set(p["A"]) & set(p["B"]))
        if not both:
            continue
        paired = [(p["A"][r] / p["B"][r]) if p["higher"] else (p["B"][r] / p["A"][r]) for r in both]
        rows.append({
            "table": tname, "key": list(key), "column": col,
            "a_median": statistics.median(p["A"][r] for r in both),
            "b_median": statistics.median(p["B"][r] for r in both),
            "ratio": statistics.median(paired), "ratio_min": min(paired), "ratio_max": max(paired),
            "ratio_q1": quartiles(paired)[0], "ratio_q3": quartiles(paired)[1],
            "rounds": len(both), "higher_is_better": p["higher"],
        })
    hdr = f"{'table':<16} {'column':<14} {'point':<28} {'A':>10} {'B':>10} {'B/A':>6}  spread"
    print(f"\n{a.driver}: B/A as a time (above 1: B slower), median of {a.rounds} paired rounds")
    print(hdr)
    print("-" * len(hdr))
    for x in rows:
        print(f"{x['table']:<16} {x['column']:<14} {' '.join(map(str, x['key'])):<28} {x['a_median']:>10.4g} "
              f"{x['b_median']:>10.4g} {x['ratio']:>6.3f}  {x['ratio_min']:.3f}..{x['ratio_max']:.3f}")
    ratios = [x["ratio"] for x in rows]
    if ratios:
        print(f"\nall points: median B/A {statistics.median(ratios):.3f} "
              f"(geometric mean {statistics.geometric_mean(ratios):.3f}) over {len(ratios)} points, "
              f"{time.time() - t0:.0f} s")
    out = {
        "benchmark": "ab", "driver": a.driver, "driver_args": a.args, "a": str(a.a), "b": str(a.b),
        "rounds": a.rounds, "machine": C.machine_info(), "same_calibration": same_calibration,
        "points": rows,
        "median_ratio": statistics.median(ratios) if ratios else None,
        "runs": per,
    }
    path = a.out_dir / f"{name}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")
    plot(rows, a.out_dir / f"{name}.png", a.driver)
    return 0


def plot(rows: list[dict], path: Path, driver: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print("WARNING: matplotlib is not installed (scripts/install-deps.sh installs it); no plot written")
        return
    if not rows:
        return
    # A point's key alone leaves a bandwidth row looking like a latency's:
    # name its table unless the key already says what it is (p2p's
    # "latency_sched 65536"), and its noise condition, if any.
    def label(x: dict) -> str:
        cond, _, table = x["table"].rpartition(":")
        what = "" if table.startswith("medians") else table.replace("_gbps", "") + " "
        return f"{cond + ': ' if cond else ''}{what}{x['column']} {' '.join(map(str, x['key']))}"
    labels = [label(x) for x in rows]
    # One row per point, ratios on a log scale clipped to 0.5..2: a noisy
    # round (a ratio of 5) would otherwise flatten every bar.
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.16 * len(rows)))
    ys = list(range(len(rows)))[::-1]
    clip = lambda v: min(max(v, 0.5), 2.0)  # noqa: E731
    ax.barh(ys, [clip(x["ratio"]) - 1 for x in rows], left=1, height=0.6,
            color=["tab:red" if x["ratio"] > 1.05 else "tab:green" if x["ratio"] < 0.95 else "tab:gray" for x in rows])
    ax.errorbar([clip(x["ratio"]) for x in rows], ys,
                xerr=[[clip(x["ratio"]) - clip(x["ratio_q1"]) for x in rows], [clip(x["ratio_q3"]) - clip(x["ratio"]) for x in rows]],
                fmt="none", ecolor="black", capsize=1.5, lw=0.7)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlim(0.5, 2.0)
    ax.set_xticks([0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0])
    ax.set_xticklabels(["0.5", "0.8", "0.9", "1", "1.1", "1.25", "2"])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_xlabel("B / A (time; above 1: B slower), median of paired rounds, whiskers: quartiles")
    ax.set_title(f"{driver}: build B against build A", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
