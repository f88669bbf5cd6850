#!/usr/bin/env python3
"""table.txt (the barrier row of bench/coll.py's summary, one line per full run) ->
summary.json and barrier.png: goal AUTO, goal manual and the best MPI setting per run."""
import json
from pathlib import Path

HERE = Path(__file__).parent
rows = []
for n, line in enumerate((HERE / "table.txt").read_text().splitlines(), 1):
    f = line.split()
    # barrier - AUTO best-alg 'auto' manual ompi b nosc b mpich b|nb best-us best-lib ratio ...
    rows.append({"run": n, "goal_auto_us": float(f[2]), "goal_manual_us": float(f[5]),
                 "openmpi_us": float(f[6]), "openmpi_nosc_us": float(f[8]), "mpich_us": float(f[10]),
                 "best_mpi_us": float(f[12]), "best_mpi": f[13], "auto_over_best": float(f[14])})
(HERE / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.6))
w = 0.27
xs = range(len(rows))
for k, (key, label) in enumerate((("goal_auto_us", "goal AUTO"), ("goal_manual_us", "goal manual"),
                                  ("best_mpi_us", "best MPI setting"))):
    ax.bar([x + (k - 1) * w for x in xs], [r[key] for r in rows], w, label=label)
ax.set_xticks(list(xs), [f"run {r['run']}\n{r['auto_over_best']:.2f}x" for r in rows])
ax.set_ylabel("barrier, median (us)")
ax.set_title("2-rank barrier, five consecutive full runs (AMD EPYC VM)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "barrier.png", dpi=110)
