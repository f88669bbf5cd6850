"""Plots ab.txt: 2 ranks, reduce and allreduce from 512 KiB, before and after, per vCPU placement (each run a dot); writes ab.png."""
import collections
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = Path(__file__).parent
NAMES = {"pfx-slow": "before (735c213)", "pfx-fuse": "after"}
data = collections.defaultdict(lambda: collections.defaultdict(list))
for line in (here / "ab.txt").read_text().splitlines():
    if line.startswith("#") or not line.strip():
        continue
    f = line.split()
    state = "vCPUs apart" if max(float(f[1]), float(f[2])) > 100 else "vCPUs close"
    for kv in f[3:]:
        k, v = kv.split("=")
        data[(state, k)][NAMES[f[0]]].append(float(v))
points = sorted({k for _, k in data}, key=lambda k: (k.split("/")[0], int(k.split("/")[1])))
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, state in zip(axes, ["vCPUs close", "vCPUs apart"]):
    for j, (name, col) in enumerate(zip(NAMES.values(), ["tab:gray", "tab:blue"])):
        for i, p in enumerate(points):
            ys = data[(state, p)][name]
            ax.scatter([i + (j - 0.5) * 0.3] * len(ys), ys, s=10, color=col, label=name if i == 0 else None)
    ax.set_xticks(range(len(points)), [p.replace("/524288", " 512K").replace("/1048576", " 1M").replace("/4194304", " 4M") for p in points], fontsize=8, rotation=20)
    ax.set_yscale("log")
    ax.set_title(state, fontsize=9)
    ax.grid(alpha=0.3)
axes[0].set_ylabel("us per iteration (goal_coll AUTO, median of a run)")
axes[0].legend(fontsize=8)
fig.suptitle("2 ranks: fused receives read by CMA where the stream measures 3x slower", fontsize=9)
fig.tight_layout()
fig.savefig(here / "ab.png", dpi=110)
