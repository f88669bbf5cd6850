#!/usr/bin/env python3
"""quiet-spells.png: one-way latency of 4 and 16 MiB per alternated run (lat-ab-close.txt),
base against new. The collectives' tables and plots come from
../shared-stream-2026-12-04/plot.py (coll2/, coll4/, coll4-everywhere/).

    python3 plot.py        (in this directory)
"""
import collections

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

runs = collections.defaultdict(list)  # (label, test, KiB) -> [us], one per run
for line in open("lat-ab-close.txt"):
    p = line.split()
    for kv in p[3:]:
        k, v = kv.split("=")
        t, kib = k.split(":")
        runs[(p[1], t, int(kib))].append(float(v))

fig, a = plt.subplots(figsize=(7, 5))
for kib, mark in ((4096, "o"), (16384, "s")):
    for lab, col in (("base", "tab:gray"), ("new", "tab:blue")):
        ys = [y / (kib / 4096) for y in runs.get((lab, "sch", kib), [])]
        a.plot(range(1, len(ys) + 1), ys, mark + "-", color=col,
               label=f"{lab} {kib >> 10} MiB" + (" (/4)" if kib == 16384 else ""))
a.set_xlabel("alternated run (vCPUs close)")
a.set_ylabel("one-way latency, us (16 MiB divided by 4)")
a.set_title("2 ranks, one schedule of ping-pongs: the spin's quiet spells (2026-12-05)", fontsize=10)
a.legend(fontsize=8)
fig.tight_layout()
fig.savefig("quiet-spells.png", dpi=90)
print("wrote quiet-spells.png")
