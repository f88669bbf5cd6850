#!/usr/bin/env python3
"""Tables and a plot of the ring A/B: p2p-ab.txt (ab_p2p.sh), coll2-ab.txt and coll4-ab.txt
(ab_coll.sh). Prints markdown tables of medians and new/old ratios; writes ring-1m.png.
    python3 plot.py > tables.md"""
import collections
import statistics as st
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def p2p(path):
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in open(path):
        f = line.split()
        build = f[3]
        for kv in f[6:]:
            k, v = kv.split("=")
            rows[k][build].append(float(v))
    return rows


def coll(path):
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in open(path):
        _, ring, name, size, us = line.split()
        rows[(name, int(size))][ring[1:]].append(float(us))
    return rows


def human(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1024 else f"{n} B"


def main():
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))
    p = p2p("p2p-ab.txt")
    old, new = "gp", "gp-new"
    print("| 2 ranks, point to point | 256 KiB ring | 1 MiB ring | ratio |\n|---|---|---|---|")
    for kind, unit, i in (("L", "us one-way", 0), ("B", "GB/s streaming", 1)):
        xs, ys = [], []
        for k in sorted((k for k in p if k[0] == kind), key=lambda k: int(k[1:])):
            n = int(k[1:])
            a, b = st.median(p[k][old]), st.median(p[k][new])
            xs.append(n); ys.append(b / a)
            if n >= 1024:
                print(f"| {'latency' if kind == 'L' else 'bandwidth'} {human(n)} | {a:.3g} | {b:.3g} | {b / a:.2f} |")
        ax[i].semilogx(xs, ys, "o-", base=2)
        ax[i].axhline(1, color="grey", lw=0.8)
        ax[i].set_xlabel("message bytes")
        ax[i].set_ylabel(f"1 MiB ring / 256 KiB ring ({unit})")
        ax[i].set_title(f"2 ranks, {'one-way latency' if kind == 'L' else 'streaming bandwidth'} ({len(p[k][old])} alternations)")
    print("\n| collective, AUTO | size | 2 ranks: 256K / 1M ring, us | ratio | 4 ranks on 2 CPUs: 256K / 1M, us | ratio |\n|---|---|---|---|---|---|")
    c2, c4 = coll("coll2-ab.txt"), coll("coll4-ab.txt")
    names, r2, r4 = [], [], []
    for key in sorted(set(c2) | set(c4), key=lambda k: (k[1], k[0])):
        cells = []
        for c, acc in ((c2, r2), (c4, r4)):
            if key in c:
                a, b = st.median(c[key]["256K"]), st.median(c[key]["1M"])
                cells += [f"{a:.3g} / {b:.3g}", f"{b / a:.2f}"]
                if key[1] == 65536:
                    acc.append(b / a)
            else:
                cells += ["", ""]
                if key[1] == 65536:
                    acc.append(float("nan"))
        if key[1] == 65536:
            names.append(key[0])
        print(f"| {key[0]} | {human(key[1])} | " + " | ".join(cells) + " |")
    x = range(len(names))
    ax[2].bar([i - 0.2 for i in x], r2, 0.4, label="2 ranks")
    ax[2].bar([i + 0.2 for i in x], r4, 0.4, label="4 ranks on 2 CPUs")
    ax[2].axhline(1, color="grey", lw=0.8)
    ax[2].set_xticks(list(x), names, rotation=45, ha="right", fontsize=8)
    ax[2].set_ylabel("1 MiB ring / 256 KiB ring (median us)")
    ax[2].set_title("collectives of 64 KiB, AUTO (3 alternations)")
    ax[2].legend()
    fig.suptitle("goal's eager ring, 1 MiB against 256 KiB (AMD EPYC VM, vCPUs 26-31 ns apart)")
    fig.tight_layout()
    fig.savefig("ring-1m.png", dpi=90)
    print("\nwrote ring-1m.png", file=sys.stderr)


main()
