"""Plots bandwidth.txt: goal_p2p windows of 64 KiB and up, before and after, per condition (each round a dot)."""
import re, sys
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = Path(__file__).parent
cond, data = None, {}
for line in (here / "bandwidth.txt").read_text().splitlines():
    if line.startswith("#"):
        cond = None if "swapped" in line else line[2:].split(" (")[0]
        continue
    if cond is None:
        continue
    m = re.match(r"\s*(\d+) old (.*) \| new (.*) \| medians", line)
    if m:
        d = data.setdefault(cond, {}).setdefault(int(m[1]), {"old": [], "new": []})
        d["old"] += [float(x) for x in m[2].split()]
        d["new"] += [float(x) for x in m[3].split()]
fig, axes = plt.subplots(1, len(data), figsize=(4.2 * len(data), 3.6), sharey=True)
for ax, (c, sizes) in zip(axes, data.items()):
    xs = sorted(sizes)
    for k, (which, col) in enumerate([("old", "tab:gray"), ("new", "tab:blue")]):
        for i, s in enumerate(xs):
            ys = sizes[s][which]
            ax.scatter([i + (k - 0.5) * 0.25] * len(ys), ys, s=12, color=col, label=("before" if which == "old" else "after") if i == 0 else None)
    ax.set_xticks(range(len(xs)), [f"{s >> 10} KiB" if s < 1 << 20 else f"{s >> 20} MiB" for s in xs], fontsize=8)
    ax.set_title(c, fontsize=9)
    ax.grid(alpha=0.3)
axes[0].set_ylabel("GB/s (window of 64 messages)")
axes[0].legend(fontsize=8)
fig.suptitle("2 ranks, goal_p2p bandwidth: bursts of 64 KiB by the stream (after) or split CMA (before)", fontsize=9)
fig.tight_layout()
fig.savefig(here / "bandwidth.png", dpi=110)
