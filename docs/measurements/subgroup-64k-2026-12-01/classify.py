#!/usr/bin/env python3
"""classify.py DUMP: the iterations of a sub-group point as the dump patch of
../subgroup-8b-2026-11-29/ writes them (one line per iteration, each rank's
time in us), split into "together" (mean of the 4 ranks under 8 us) and
"crossed" (8 to 16 us); prints the median of the means and each kind's
count and median, and each rank's median."""
import statistics as st
import sys

rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
means = [sum(r) / len(r) for r in rows]
fast = [m for m in means if m < 8]
slow = [m for m in means if 8 <= m < 16]
med = lambda v: st.median(v) if v else 0.0
print("median %.2f  together %d (median %.2f)  crossed %d (median %.2f)  other %d"
      % (st.median(means), len(fast), med(fast), len(slow), med(slow), len(means) - len(fast) - len(slow)))
print("rank medians", " ".join("%.2f" % st.median(r[i] for r in rows) for i in range(len(rows[0]))))
