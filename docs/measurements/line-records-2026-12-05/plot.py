"""Table and plot of the record's point-to-point alternations (lat-*.txt, bw.txt, written by
the hand-typed loops of the README): per vCPU state (a cache line under
100 ns between the two CPUs: close, else apart), test and size, the medians of goal before,
goal after and Open MPI without single copy, with after/before and after/Open MPI. Writes
p2p-table.txt and line-records.png here.

    python3 plot.py"""
import collections
import re
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
runs = collections.defaultdict(list)  # (file, state, test, bytes, lib) -> [value]
for path in sorted(HERE.glob("lat-*.txt")) + sorted(HERE.glob("bw*.txt")):
    for line in path.read_text().splitlines():
        m = re.match(r"\d+ c2c=([\d.]+) (\S+) ?(.*)", line)
        if not m:
            continue
        state = "close" if float(m.group(1)) < 100 else "apart"
        lib = {"goal[default]": "before", "goal-base": "before", "ompi-nosc": "ompi-nosc"}.get(m.group(2), "after")
        for item in m.group(3).split():
            key, val = item.split("=")
            test, size = key.split(":") if ":" in key else ("bw", key)
            test = {"sche": "latency (schedule)", "runw": "latency (single trips)", "lat": "latency"}.get(test, "bandwidth")
            size = int(size) << (10 if test == "bandwidth" else 0)
            runs[(path.stem, state, test, size, lib)].append(float(val))

rows, labels, vs_before, vs_ompi = [], [], [], []
keys = sorted({k[:4] for k in runs if k[4] != "ompi-nosc"}, key=lambda k: (k[0], k[1], k[3]))
for f, state, test, size in keys:
    before, after = runs.get((f, state, test, size, "before")), runs.get((f, state, test, size, "after"))
    ompi_test = "bandwidth" if test == "bandwidth" else "latency"
    ompi = runs.get((f, state, ompi_test, size, "ompi-nosc"))
    if not before or not after:
        continue
    b, a = statistics.median(before), statistics.median(after)
    o = statistics.median(ompi) if ompi else float("nan")
    # Bandwidth: higher is better, so the ratios are of times (before/after).
    r_b, r_o = (b / a, o / a) if test == "bandwidth" else (a / b, a / o)
    label = f"{size >> 10} KiB" if size >= 1024 else f"{size} B"
    unit = "GB/s" if test == "bandwidth" else "us"
    rows.append(f"{state:6s} {test:23s} {label:>8s} {b:9.3f} {a:9.3f} {o:10.3f} {unit:5s} {r_b:6.2f} {r_o:7.2f}  ({len(after)} runs)")
    labels.append(f"{state}, {test}, {label}")
    vs_before.append(r_b)
    vs_ompi.append(r_o)
head = f"{'state':6s} {'test':23s} {'size':>8s} {'before':>9s} {'after':>9s} {'ompi-nosc':>10s} {'':5s} {'a/b':>6s} {'a/ompi':>7s}"
(HERE / "p2p-table.txt").write_text("2 ranks, medians over alternated runs (ratios of times: below 1, goal after the change is faster)\n"
                                    + head + "\n" + "\n".join(rows) + "\n")

fig, ax = plt.subplots(figsize=(10, 0.3 * len(labels) + 1.5))
y = range(len(labels))
ax.barh([i - 0.2 for i in y], vs_before, height=0.4, label="goal after / goal before")
ax.barh([i + 0.2 for i in y], vs_ompi, height=0.4, label="goal after / Open MPI, no single copy")
ax.axvline(1.0, color="black", linewidth=0.8)
ax.set_yticks(list(y))
ax.set_yticklabels(labels, fontsize=7)
ax.invert_yaxis()
ax.set_xlabel("time ratio (below 1: goal after the change is faster)")
ax.set_title("2 ranks: eager records on cache lines")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "line-records.png", dpi=90)
