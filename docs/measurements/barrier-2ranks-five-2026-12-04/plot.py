#!/usr/bin/env python3
"""table.txt (the barrier row of bench/coll.py's report, one line per full run) and states.txt
(states.sh: library, core-to-core probe before and after, median us) -> barrier.png: goal AUTO,
goal manual and the best MPI setting per run (left), and each run of states.sh by the vCPUs'
state (right)."""
from pathlib import Path
import re
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).parent
runs = []
for line in (HERE / "table.txt").read_text().splitlines():
    f = line.split()
    paired = re.search(r"paired ([0-9.]+)", line)
    runs.append({"auto": float(f[2]), "manual": float(f[5]), "best": float(f[12]), "ratio": float(f[14]),
                 "paired": float(paired.group(1)) if paired else None})
states = []
for line in (HERE / "states.txt").read_text().splitlines():
    lib, before, after, us = line.split()
    a, b = float(before), float(after)
    # Mixed: the vCPUs changed state during the run (bench/common.py's same_state).
    states.append((lib, max(a, b), float(us), max(a, b) / min(a, b) > 1.5))

fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]})
w = 0.27
for k, (key, label) in enumerate((("auto", "goal AUTO"), ("manual", "goal manual"), ("best", "best MPI setting"))):
    ax.bar([x + (k - 1) * w for x in range(len(runs))], [r[key] for r in runs], w, label=label)
ax.set_xticks(range(len(runs)), [f"run {i + 1}\n{r['ratio']:.2f}x" + (f"\n(paired {r['paired']:.2f})" if r["paired"] else "")
                                 for i, r in enumerate(runs)], fontsize=8)
ax.set_ylabel("barrier, median (us)")
ax.set_title("five consecutive full runs of bench/coll.py", fontsize=9)
ax.legend(fontsize=8)
for lib, marker, label in (("goal", "o", "goal AUTO"), ("ompi", "s", "Open MPI, blocking")):
    pts = [(c, us) for l, c, us, mixed in states if l == lib and not mixed]
    bx.scatter([c for c, _ in pts], [us for _, us in pts], marker=marker, label=label, alpha=0.6)
bx.set_xlim(0, 320)
bx.set_xlabel("core-to-core latency around the run (ns, the larger probe)")
bx.set_ylabel("barrier, median of the run (us)")
bx.set_title("runs alternated, by the vCPUs' state (states.sh)", fontsize=9)
bx.legend(fontsize=8)
fig.suptitle("2-rank barrier, AMD EPYC VM", fontsize=10)
fig.tight_layout()
fig.savefig(HERE / "barrier.png", dpi=110)
