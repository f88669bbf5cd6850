"""Medians of ab.sh's output by core-to-core state: python3 table.py ab.txt [plot.png [TITLE]]."""
import collections
import statistics
import sys

SIZES = ["64 KiB", "256 KiB", "1 MiB", "4 MiB", "16 MiB"]
LABELS = {"base": "before", "new": "after", "ompi": "Open MPI, no single copy"}
FAR_NS = 120


def load(path):
    runs = collections.defaultdict(list)
    for line in open(path):
        f = line.split()
        if len(f) < 3 + 2 * len(SIZES):
            continue
        before, after, lab = float(f[0]), float(f[1]), f[2]
        if (before < FAR_NS) != (after < FAR_NS):
            continue  # the state changed during the run
        state = "close" if before < FAR_NS else "far"
        runs[(state, lab)].append([float(x) for x in f[4:3 + 2 * len(SIZES):2]])
    return runs


def main():
    runs = load(sys.argv[1])
    med = {}
    for state in ("close", "far"):
        print(f"\nvCPUs {state} (a cache line between them {'under' if state == 'close' else 'at least'} {FAR_NS} ns before and after the run)")
        print("GB/s, median (min-max) of the runs")
        print(f"{'':26s} {'runs':>4s} " + " ".join(f"{s:>17s}" for s in SIZES))
        for lab, name in LABELS.items():
            rows = runs.get((state, lab), [])
            if not rows:
                continue
            cols = [[r[i] for r in rows] for i in range(len(SIZES))]
            med[(state, lab)] = [statistics.median(c) for c in cols]
            cells = [f"{statistics.median(c):5.1f} ({min(c):4.1f}-{max(c):4.1f})" for c in cols]
            print(f"{name:26s} {len(rows):4d} " + " ".join(f"{c:>17s}" for c in cells))
    if len(sys.argv) > 2:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        states = [st for st in ("close", "far") if any(k[0] == st for k in med)]
        fig, axes = plt.subplots(1, len(states), figsize=(5.5 * len(states), 4), sharey=True, squeeze=False)
        axes = axes[0]
        for ax, state in zip(axes, states):
            width = 0.27
            for k, (lab, name) in enumerate(LABELS.items()):
                if (state, lab) in med:
                    xs = [i + (k - 1) * width for i in range(len(SIZES))]
                    ax.bar(xs, med[(state, lab)], width, label=name)
            ax.set_xticks(range(len(SIZES)), SIZES)
            ax.set_title(f"vCPUs {state}")
            ax.set_xlabel("message size (windows of sends)")
        axes[0].set_ylabel("streaming bandwidth, GB/s (median)")
        axes[0].legend()
        fig.suptitle(sys.argv[3] if len(sys.argv) > 3 else "2 ranks: bursts past the ring by rendezvous (eager-burst)")
        fig.tight_layout()
        fig.savefig(sys.argv[2], dpi=110)


main()
