"""Plots states.txt: 64 KiB windows of goal_p2p against the vCPUs' core-to-core latency, before and after; writes states.png and summary.json."""
import json, statistics as st
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = Path(__file__).parent
SIZES = ["64 KiB", "256 KiB", "1 MiB", "4 MiB", "16 MiB"]
NAMES = {"pfx-ae1": "before (ae1aaf0)", "pfx-slow": "after"}
runs = []
for line in (here / "states.txt").read_text().splitlines():
    if line.startswith("#") or not line.strip():
        continue
    f = line.split()
    c2c = max(float(f[1]), float(f[2]))
    runs.append({"build": NAMES[f[0]], "c2c_before_ns": float(f[1]), "c2c_after_ns": float(f[2]),
                 "state": "apart" if c2c > 100 else "close", "gbps": dict(zip(SIZES, map(float, f[3:])))})

summary = {"test": "goal_p2p --tests bandwidth, 2 ranks, quiet; window of 64 messages",
           "state": "apart when the probe read over 100 ns before or after the run (close: 24-38 ns, apart: 198-315)",
           "medians_gbps": {}}
for state in ("close", "apart"):
    for build in NAMES.values():
        sel = [r for r in runs if r["state"] == state and r["build"] == build]
        summary["medians_gbps"][f"{state}, {build}"] = {"runs": len(sel), **{s: round(st.median(r["gbps"][s] for r in sel), 1) for s in SIZES},
                                                        "64 KiB min": min(r["gbps"]["64 KiB"] for r in sel)}
(here / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

fig, ax = plt.subplots(figsize=(6.4, 4.0))
for build, col in zip(NAMES.values(), ["tab:gray", "tab:blue"]):
    sel = [r for r in runs if r["build"] == build]
    ax.scatter([max(r["c2c_before_ns"], r["c2c_after_ns"]) for r in sel], [r["gbps"]["64 KiB"] for r in sel], s=16, color=col, label=build, alpha=0.8)
ax.set_xscale("log")
ax.set_xlabel("core-to-core one-way latency, the larger of the probes before and after (ns)")
ax.set_ylabel("GB/s, window of 64 x 64 KiB")
ax.set_title("2 ranks, bursts of 64 KiB: with the vCPUs apart, CMA once the stream measures slower", fontsize=9)
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(here / "states.png", dpi=110)
