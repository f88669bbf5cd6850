import sys, statistics as st, collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    p=l.split()
    if p[0]=='c2c': continue
    d[(p[1],int(p[2]),p[0])].append(float(p[3]))
keys=sorted({(k[0],k[1]) for k in d})
print("%-22s %8s %9s %9s %9s %6s" % ("coll","bytes","base","new","ompi","n/b"))
for c,b in keys:
    g=lambda lab: st.median(d[(c,b,lab)]) if d[(c,b,lab)] else float('nan')
    print("%-22s %8d %9.1f %9.1f %9.1f %6.2f" % (c,b,g('base'),g('new'),g('ompi-nosc'),g('new')/g('base')))
