import sys, statistics as st
from collections import Counter
for fn in sys.argv[1:]:
    rows=[list(map(float,l.split())) for l in open(fn)]
    means=[sum(r)/len(r) for r in rows]
    pat=Counter(tuple(int(x>1.0) for x in r) for r in rows)
    print(fn, "n", len(rows), "median of means %.3f"%st.median(means))
    for p,c in pat.most_common(6):
        sel=[r for r in rows if tuple(int(x>1.0) for x in r)==p]
        print("   slow ranks", p, c, "mean %.2f"%st.median([sum(r)/4 for r in sel]), "per rank", ["%.2f"%st.median([r[i] for r in sel]) for i in range(4)])
