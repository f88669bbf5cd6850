#!/usr/bin/env python3
"""Summarizes run.sh's JSON lines: per variant and collective, the median
over rounds of each run's median and 75th percentile (us), the median's
range, and its ratio to `manual`; writes summary-NAME.json and NAME.png.
    python3 summarize.py runs.jsonl NAME"""
import json, statistics, sys
from collections import defaultdict

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
name = sys.argv[2] if len(sys.argv) > 2 else "oversub-gap"
by, p75 = defaultdict(list), defaultdict(list)
for r in rows:
    by[(r["variant"], r["coll"])].append(r["median_us"])
    p75[(r["variant"], r["coll"])].append(r["p75_us"])
variants = list(dict.fromkeys(r["variant"] for r in rows))
colls = list(dict.fromkeys(r["coll"] for r in rows))
out = {}
for v in variants:
    for c in colls:
        us = by[(v, c)]
        out.setdefault(v, {})[c] = {"median_us": statistics.median(us), "min_us": min(us), "max_us": max(us),
                                    "p75_us": statistics.median(p75[(v, c)]), "rounds": len(us)}
for v in variants:
    for c in colls:
        out[v][c]["vs_manual"] = out[v][c]["median_us"] / out["manual"][c]["median_us"]
json.dump({"unit": "us, goal_coll's median_us (the slower rank's median), median over rounds", "variants": out},
          open(f"summary-{name}.json", "w"), indent=1)
print(f"{'variant':<12}" + "".join(f"{c:>22}" for c in colls))
for v in variants:
    print(f"{v:<12}" + "".join(f"{out[v][c]['median_us']:>8.3f} ({out[v][c]['vs_manual']:.2f}x) p75 {out[v][c]['p75_us']:.2f}" for c in colls))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    w = 0.8 / len(variants)
    for ax, key, what in ((axes[0], "median_us", "median"), (axes[1], "p75_us", "75th percentile")):
        for i, v in enumerate(variants):
            xs = [j + i * w for j in range(len(colls))]
            ax.bar(xs, [out[v][c][key] for c in colls], w, label=v)
        ax.set_xticks([j + 0.4 - w / 2 for j in range(len(colls))], [f"{c} 8 B" for c in colls])
        ax.set_ylabel(f"us, {what} (median over rounds)")
        ax.set_ylim(0, 1.35 * max(out[v][c][key] for v in variants for c in colls))
    axes[0].legend(fontsize=8, ncol=4, loc="upper left")
    fig.suptitle("2 ranks on one CPU: goal AUTO's Runs after a gap")
    fig.tight_layout()
    fig.savefig(f"{name}.png", dpi=110)
except ImportError:
    print("no matplotlib: no plot")
