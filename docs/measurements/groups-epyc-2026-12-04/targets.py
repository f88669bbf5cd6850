#!/usr/bin/env python3
"""Issue 40's targets in the three runs of this record: reads bench/groups.py's result files
(given on the command line, in run order; they stay in results/), adds each run's targets to
summary.json (under the file's name, "targets": columnar) and writes targets.txt and targets.png
(goal AUTO / best MPI setting per point and run, the paired verdict where one decided).

    python3 docs/measurements/groups-epyc-2026-12-04/targets.py results/groups.json results/groups2.json results/groups3.json

With `--record DIR` first, for another record: its summary.json, targets.txt and targets.png.
"""
import json, pathlib, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

args = sys.argv[1:]
here = pathlib.Path(__file__).parent
if args[:1] == ["--record"]:
    here, args = pathlib.Path(args[1]), args[2:]
summary = json.loads((here / "summary.json").read_text())
runs = []
for path in args:
    d = json.loads(pathlib.Path(path).read_text())
    rows = []
    for t in d["targets"]:
        paired = t.get("paired", {})
        rows.append([t["ranks"], t["coll"], t["scope"], t["bytes"], t["bound"], round(t["value"], 3), t["ok"],
                     f"{t['ref_lib']}:{t['ref_setting']}", round(t["goal_us"], 4), round(t["ref_us"], 4),
                     round(t["rounds_verdict"]["value"], 3) if "rounds_verdict" in t else None,
                     len(paired.get("pairs", [])) if paired.get("decides") else 0])
    name = pathlib.Path(path).name
    summary[name]["targets"] = {"key": ["ranks", "coll", "scope", "bytes", "bound"],
                                "columns": ["value", "ok", "ref", "goal_us", "ref_us", "rounds_value", "pairs"],
                                "rows": rows}
    runs.append((name, rows))
(here / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")

points = [tuple(r[:4]) for r in runs[0][1]]
lines = ["goal AUTO / best MPI setting per run (p: decided by pairs of runs); bound 1.2 at 8 B, 1.0 from 64 KiB",
         f"{'point':<34}" + "".join(f"{n:>16}" for n, _ in runs)]
for p in points:
    cells = []
    for _, rows in runs:
        r = next(r for r in rows if tuple(r[:4]) == p)
        cells.append(f"{r[5]:.3f}{'p' if r[11] else ' '} {'ok' if r[6] else 'MISS'}")
    label = f"{p[0]} ranks {p[1]} {p[2]} {p[3] // 1024 if p[3] >= 1024 else p[3]}{' KiB' if p[3] >= 1024 else ' B'}"
    lines.append(f"{label:<34}" + "".join(f"{c:>16}" for c in cells))
lines.append(f"{'met':<34}" + "".join(f"{sum(r[6] for r in rows):>13}/{len(rows)}" for _, rows in runs))
(here / "targets.txt").write_text("\n".join(lines) + "\n")

fig, ax = plt.subplots(figsize=(11, 4))
w = 0.8 / len(runs)
for k, (name, rows) in enumerate(runs):
    vals = [next(r for r in rows if tuple(r[:4]) == p)[5] for p in points]
    ax.bar([i + (k - (len(runs) - 1) / 2) * w for i in range(len(points))], vals, w, label=f"run {k + 1}")
for i, p in enumerate(points):
    b = runs[0][1][i][4]
    ax.plot([i - 0.45, i + 0.45], [b, b], color="black", linewidth=0.8)
ax.set_xticks(range(len(points)), [f"{p[0]}r {p[1]} {p[2]} {p[3] // 1024}K" if p[3] >= 1024 else f"{p[0]}r {p[1]} {p[2]} {p[3]}B"
                                   for p in points], rotation=40, ha="right", fontsize=7)
ax.set_ylabel("goal AUTO / best MPI setting")
ax.set_title(f"Issue 40's targets (bars; the black line is each point's bound), {len(runs)} runs of bench/groups.py, AMD EPYC VM", fontsize=9)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(here / "targets.png", dpi=110)
