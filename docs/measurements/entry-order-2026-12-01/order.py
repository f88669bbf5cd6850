#!/usr/bin/env python3
"""order.py PREFIX... : for per-iteration barrier dumps (PREFIX.RANK, lines "entry exit" in us,
4 ranks, rank r on CPU r % 2), splits the iterations by the order in which the ranks entered:
"alternating" (CPUs 0,1,0,1 or 1,0,1,0) or "paired" (a CPU's two ranks one after the other),
and prints per run the share and median of the mean over ranks of each kind, and the median
over all iterations (the benchmark's figure)."""
import json, statistics as st, sys

def load(pre):
    R = [[tuple(map(float, l.split())) for l in open(f"{pre}.{r}")] for r in range(4)]
    out = []
    for i in range(len(R[0])):
        order = sorted(range(4), key=lambda r: R[r][i][0])
        cpus = [r % 2 for r in order]
        alt = all(cpus[k] != cpus[k + 1] for k in range(3))
        out.append((alt, sum(R[r][i][1] - R[r][i][0] for r in range(4)) / 4))
    return out

rows = []
for pre in sys.argv[1:]:
    it = load(pre)
    alt = [m for a, m in it if a]
    par = [m for a, m in it if not a]
    row = {"run": pre.split("/")[-1], "iterations": len(it), "alternating_share": round(len(alt) / len(it), 3),
           "alternating_us": round(st.median(alt), 3) if alt else None,
           "paired_us": round(st.median(par), 3) if par else None,
           "median_us": round(st.median(m for _, m in it), 3)}
    rows.append(row)
    print(json.dumps(row))
