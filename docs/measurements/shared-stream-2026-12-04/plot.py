"""Table and plot of a record's alternations by ab.sh (its ab*.txt files): per collective and
size, the medians of base, new and Open MPI without single copy over the rounds, with new/base
and new/Open MPI. Writes table.txt and PLOT.png in the record's directory.

    python3 plot.py [RECORD_DIR PLOT TITLE]     (default: this record)"""
import collections
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE, PLOT, TITLE = Path(__file__).resolve().parent, "shared-stream", "4 ranks on 2 CPUs, exchanges by the stream where CMA calibrated slower"
if len(sys.argv) == 4:
    HERE, PLOT, TITLE = Path(sys.argv[1]).resolve(), sys.argv[2], sys.argv[3]
runs = collections.defaultdict(list)
for path in sorted(HERE.glob("ab*.txt")):
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[0] in ("base", "new", "ompi-nosc"):
            runs[(f[1], int(f[2]), f[0])].append(float(f[3]))

points = sorted({(c, b) for c, b, _ in runs}, key=lambda p: (p[1], p[0]))
rows, labels, vs_base, vs_ompi = [], [], [], []
for c, b in points:
    med = {lib: statistics.median(runs[(c, b, lib)]) for lib in ("base", "new", "ompi-nosc")}
    size = f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1 << 10 else f"{b} B"
    # Times under 10 us with three decimals (ab.sh writes them so since 2026-12-05).
    d = 3 if min(med.values()) < 10 else 1
    rows.append(f"{c:21s} {size:>8s} {med['base']:9.{d}f} {med['new']:9.{d}f} {med['ompi-nosc']:10.{d}f}"
                f" {med['new'] / med['base']:9.2f} {med['new'] / med['ompi-nosc']:10.2f}")
    labels.append(f"{c} {size}")
    vs_base.append(med["new"] / med["base"])
    vs_ompi.append(med["new"] / med["ompi-nosc"])

head = (f"{'collective':21s} {'size':>8s} {'base us':>9s} {'new us':>9s} {'ompi-nosc':>10s}"
        f" {'new/base':>9s} {'new/ompi':>10s}")
(HERE / "table.txt").write_text(f"{TITLE}: medians over the rounds of ab*.txt\n"
                                + head + "\n" + "\n".join(rows) + "\n")

fig, ax = plt.subplots(figsize=(10, 0.32 * len(labels) + 1.5))
y = range(len(labels))
ax.barh([i - 0.2 for i in y], vs_base, height=0.4, label="goal new / goal before")
ax.barh([i + 0.2 for i in y], vs_ompi, height=0.4, label="goal new / Open MPI, no single copy")
ax.axvline(1.0, color="black", linewidth=0.8)
ax.set_yticks(list(y))
ax.set_yticklabels(labels, fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("time ratio (below 1: goal after the change is faster)")
ax.set_title(TITLE)
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(HERE / f"{PLOT}.png", dpi=90)
