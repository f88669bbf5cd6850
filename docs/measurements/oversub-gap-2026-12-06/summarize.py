#!/usr/bin/env python3
"""Summarizes run.sh's JSON lines: per variant and collective, the median
over rounds of each run's median (us), its range, and the ratio to `manual`;
writes summary.json and oversub-gap.png.
    python3 summarize.py runs.jsonl"""
import json, statistics, sys
from collections import defaultdict

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = defaultdict(list)
for r in rows:
    by[(r["variant"], r["coll"])].append(r["median_us"])
variants = list(dict.fromkeys(r["variant"] for r in rows))
colls = list(dict.fromkeys(r["coll"] for r in rows))
out = {}
for v in variants:
    for c in colls:
        us = by[(v, c)]
        out.setdefault(v, {})[c] = {"median_us": statistics.median(us), "min_us": min(us), "max_us": max(us), "rounds": len(us)}
for v in variants:
    for c in colls:
        out[v][c]["vs_manual"] = out[v][c]["median_us"] / out["manual"][c]["median_us"]
json.dump({"unit": "us, goal_coll's median_us (the slower rank's median), median over rounds", "variants": out},
          open("summary.json", "w"), indent=1)
print(f"{'variant':<12}" + "".join(f"{c:>22}" for c in colls))
for v in variants:
    print(f"{v:<12}" + "".join(f"{out[v][c]['median_us']:>10.3f} ({out[v][c]['vs_manual']:.2f}x)     " for c in colls))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4))
    w = 0.8 / len(variants)
    for i, v in enumerate(variants):
        xs = [j + i * w for j in range(len(colls))]
        ys = [out[v][c]["median_us"] for c in colls]
        err = [[out[v][c]["median_us"] - out[v][c]["min_us"] for c in colls], [out[v][c]["max_us"] - out[v][c]["median_us"] for c in colls]]
        ax.bar(xs, ys, w, yerr=err, label=v, capsize=2)
    ax.set_xticks([j + 0.4 - w / 2 for j in range(len(colls))], [f"{c} 8 B" for c in colls])
    ax.set_ylabel("us per collective (median over rounds; bars: range)")
    ax.set_title("2 ranks on one CPU: goal AUTO's Runs after a gap")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig("oversub-gap.png", dpi=110)
except ImportError:
    print("no matplotlib: no plot")
