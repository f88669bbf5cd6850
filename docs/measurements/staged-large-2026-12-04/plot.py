#!/usr/bin/env python3
"""Reads this record's ab.txt (goal before and after, alternated) and summary.json (goal
beside Open MPI, from bench/summarize.py), adds the alternation's medians to summary.json
under "ab", writes table.txt and staged-large.png: per collective and size, new / old
(left) and goal AUTO / Open MPI's best setting (right)."""
import json, re, statistics as st, pathlib
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = pathlib.Path(__file__).parent
ab = {}
for line in (here / "ab.txt").read_text().splitlines():
    m = re.match(r"(\w+)/(\d+)\s+old (.*) \| new (.*) \| medians", line)
    if m:
        old, new = ([float(x) for x in g.split()] for g in (m.group(3), m.group(4)))
        ab[(m.group(1), int(m.group(2)))] = (st.median(old), st.median(new))
summary = json.loads((here / "summary.json").read_text())
cols = summary["medians_us"]["columns"]
peers = {}
for ranks, coll, size, *vals in summary["medians_us"]["rows"]:
    mpi = [v for c, v in zip(cols, vals) if not c.startswith("goal") and v is not None]
    peers[(coll, size)] = (vals[cols.index("goal:AUTO")], min(mpi))
summary["ab"] = {
    "key": ["coll", "bytes"], "columns": ["old_us", "new_us", "new/old"],
    "rows": [[c, b, round(o, 1), round(n, 1), round(n / o, 3)] for (c, b), (o, n) in sorted(ab.items())],
}
(here / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")

colls = ["alltoall", "alltoallv", "allgather", "allgatherv"]
sizes = sorted({b for _, b in ab})
lines = ["4 ranks on 2 CPUs, AUTO. Alternation (ab.txt): medians of 6 runs each, us. "
         "Beside Open MPI (coll.txt): another run, its medians.",
         f"{'point':<20} {'old':>8} {'new':>8} {'new/old':>8}   {'goal':>8} {'Open MPI':>9} {'goal/MPI':>9}"]
for c in colls:
    for b in sizes:
        o, n = ab[(c, b)]
        g, m = peers.get((c, b), (float("nan"), float("nan")))
        lines.append(f"{c + ' ' + str(b // 1024) + ' KiB':<20} {o:8.1f} {n:8.1f} {n / o:8.2f}   {g:8.1f} {m:9.1f} {g / m:9.2f}")
(here / "table.txt").write_text("\n".join(lines) + "\n")

fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for c in colls:
    axes[0].plot([b // 1024 for b in sizes], [ab[(c, b)][1] / ab[(c, b)][0] for b in sizes], marker="o", label=c)
    axes[1].plot([b // 1024 for b in sizes], [peers[(c, b)][0] / peers[(c, b)][1] for b in sizes], marker="o", label=c)
axes[0].set_title("staged up to 512 KiB / up to 64 KiB (alternated)", fontsize=9)
axes[1].set_title("goal AUTO / Open MPI's best setting (one run)", fontsize=9)
for ax in axes:
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axvline(512, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks([b // 1024 for b in sizes], [f"{b // 1024}K" for b in sizes])
    ax.set_xlabel("bytes per block")
axes[0].set_ylabel("median time ratio")
axes[0].legend(fontsize=8)
fig.suptitle("4 ranks on 2 CPUs (AMD EPYC VM): messages to the rank on this CPU staged in the heap", fontsize=10)
fig.tight_layout()
fig.savefig(here / "staged-large.png", dpi=110)
