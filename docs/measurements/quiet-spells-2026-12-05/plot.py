#!/usr/bin/env python3
"""quiet-spells.png: left, one-way latency of 4 and 16 MiB per alternated run (lat-ab-close.txt);
right, new/base medians of the collective alternations (coll2-ab.txt, coll4-ab.txt).

    python3 plot.py        (in this directory)
"""
import collections
import statistics as st

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def lat(path):
    runs = collections.defaultdict(list)  # (label, test, KiB) -> [us]
    for line in open(path):
        p = line.split()
        for kv in p[3:]:
            k, v = kv.split("=")
            t, kib = k.split(":")
            runs[(p[1], t, int(kib))].append(float(v))
    return runs


def coll(path):
    d = collections.defaultdict(list)
    for line in open(path):
        p = line.split()
        if p[0] != "c2c":
            d[(p[1], int(p[2]), p[0])].append(float(p[3]))
    pts = sorted({(c, b) for c, b, _ in d})
    return [(f"{c} {b >> 10 and str(b >> 10) + 'K' or str(b)}", st.median(d[(c, b, "new")]) / st.median(d[(c, b, "base")]))
            for c, b in pts if d[(c, b, "new")] and d[(c, b, "base")]]


fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
runs = lat("lat-ab-close.txt")
for kib, mark in ((4096, "o"), (16384, "s")):
    for lab, col in (("base", "tab:gray"), ("new", "tab:blue")):
        ys = runs.get((lab, "sch", kib), [])
        a.plot(range(1, len(ys) + 1), [y / (kib / 4096) for y in ys], mark + "-", color=col,
               label=f"{lab} {kib >> 10} MiB" + (" (/4)" if kib == 16384 else ""))
a.set_xlabel("alternated run")
a.set_ylabel("one-way latency, us (16 MiB divided by 4)")
a.set_title("2 ranks, one schedule of ping-pongs (latency_sched)")
a.legend(fontsize=8)
rows = [("2 ranks", r) for r in coll("coll2-ab.txt")] + [("4 ranks", r) for r in coll("coll4-ab.txt")]
b.barh(range(len(rows)), [r[1][1] for r in rows], color=["tab:blue" if n == "2 ranks" else "tab:orange" for n, _ in rows])
b.set_yticks(range(len(rows)), [f"{n}: {r[0]}" for n, r in rows], fontsize=7)
b.axvline(1.0, color="k", lw=0.8)
b.set_xlim(0.8, 1.2)
b.set_xlabel("new / base (median of 4 alternated rounds)")
b.set_title("collectives (AUTO)")
fig.suptitle("The adaptive spin learns from quiet spells inside a Wait (2026-12-05)")
fig.tight_layout()
fig.savefig("quiet-spells.png", dpi=90)
print("wrote quiet-spells.png")
