"""Table and plot of this record's alternations (ab.txt, from ../shared-stream-2026-12-04/ab.sh):
per collective and size, the medians of base, new and Open MPI without single copy over
the rounds, with new/base and new/Open MPI. Writes table.txt and stage-pool.png here."""
import collections
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
runs = collections.defaultdict(list)
for name in ("ab.txt",):
    for line in (HERE / name).read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[0] in ("base", "new", "ompi-nosc"):
            runs[(f[1], int(f[2]), f[0])].append(float(f[3]))

points = sorted({(c, b) for c, b, _ in runs}, key=lambda p: (p[1], p[0]))
rows, labels, vs_base, vs_ompi = [], [], [], []
for c, b in points:
    med = {lib: statistics.median(runs[(c, b, lib)]) for lib in ("base", "new", "ompi-nosc")}
    size = f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
    rows.append(f"{c:21s} {size:>8s} {med['base']:9.1f} {med['new']:9.1f} {med['ompi-nosc']:10.1f}"
                f" {med['new'] / med['base']:9.2f} {med['new'] / med['ompi-nosc']:10.2f}")
    labels.append(f"{c} {size}")
    vs_base.append(med["new"] / med["base"])
    vs_ompi.append(med["new"] / med["ompi-nosc"])

head = (f"{'collective':21s} {'size':>8s} {'base us':>9s} {'new us':>9s} {'ompi-nosc':>10s}"
        f" {'new/base':>9s} {'new/ompi':>10s}")
(HERE / "table.txt").write_text("4 ranks on 2 CPUs, medians over the rounds of ab.txt\n"
                                + head + "\n" + "\n".join(rows) + "\n")

fig, ax = plt.subplots(figsize=(10, 0.32 * len(labels) + 1.5))
y = range(len(labels))
ax.barh([i - 0.2 for i in y], vs_base, height=0.4, label="goal after / goal before")
ax.barh([i + 0.2 for i in y], vs_ompi, height=0.4, label="goal after / Open MPI, no single copy")
ax.axvline(1.0, color="black", linewidth=0.8)
ax.set_yticks(list(y))
ax.set_yticklabels(labels, fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("time ratio (below 1: goal after the change is faster)")
ax.set_title("4 ranks on 2 CPUs, the staging pool following the sizes in use")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "stage-pool.png", dpi=90)
