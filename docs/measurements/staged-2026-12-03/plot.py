#!/usr/bin/env python3
"""Reads the ab-*.txt summaries of this record and writes summary.json and staged.png:
per point, goal's median before (old) and with staged sends (new), and Open MPI's best
setting of the same hour where it was measured (4 ranks); the plot shows both relative
to goal before."""
import json, re, statistics as st, pathlib
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = pathlib.Path(__file__).parent
points = {}
for f, ranks in [("ab-eager8k-4ranks.txt", 4), ("ab-eager8k-3-8ranks.txt", None)]:
    n = ranks
    for line in (here / f).read_text().splitlines():
        m = re.search(r"\((\d) ranks\)", line)
        if line.startswith("#"):
            n = int(m.group(1)) if m else n
            continue
        m = re.match(r"(\S+)\s+old (.*) \| new (.*) \| medians", line)
        if m:
            old = [float(x) for x in m.group(2).split()]
            new = [float(x) for x in m.group(3).split()]
            points[f"{m.group(1)} x{n}"] = {"ranks": n, "old_us": st.median(old), "new_us": st.median(new),
                                            "ratio": round(st.median(new) / st.median(old), 3)}
# Open MPI: per variant, the median over its runs; the best setting is the least of those.
ompi = {}
for line in (here / "openmpi-4ranks.txt").read_text().splitlines():
    if not line.startswith("#"):
        k, v = line.split()
        coll, size, variant = k.split("/")
        ompi.setdefault(f"{coll}/{size} x4", {}).setdefault(variant, []).append(float(v))
for k, p in points.items():
    if k in ompi:
        p["openmpi_best_us"] = min(st.median(v) for v in ompi[k].values())
(here / "summary.json").write_text(json.dumps(points, indent=1) + "\n")
names = list(points)
fig, ax = plt.subplots(figsize=(9, 4))
w = 0.38
for i, (key, label) in enumerate([("new_us", "goal, staged sends"), ("openmpi_best_us", "Open MPI, best setting (4 ranks only)")]):
    ax.bar([x + (i - 0.5) * w for x in range(len(names))], [points[n].get(key, 0) / points[n]["old_us"] for n in names], w, label=label)
ax.axhline(1.0, color="black", linewidth=0.8)
ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
ax.set_ylabel("median time / goal before")
ax.set_title("More ranks than cores (2 CPUs), AUTO, eager limit 8 KiB: medians of alternated runs")
ax.legend(fontsize=8, loc="lower left")
fig.tight_layout()
fig.savefig(here / "staged.png", dpi=110)
