"""Instructions per iteration of a Run/Wait loop, by function, from one
rank's callgrind output (see README.md): prof.py CALLGRIND_OUT ITERATIONS.
Exit status 1 when more than 3 % of the messages arrived before their
execution started (the path of a rank slowed down by callgrind alone)."""
import sys,collections
f,n=sys.argv[1],int(sys.argv[2])
d=collections.Counter(); calls=collections.Counter(); fn=None; skip=False; cfn=None; incl=collections.Counter()
for l in open(f):
    if l.startswith('fn='): fn=l[3:].strip(); continue
    if l.startswith('cfn='): cfn=l[4:].strip(); continue
    if l.startswith('calls='): skip=True; calls[cfn]+=int(l.split()[0][6:]); continue
    if l[:1].isdigit() or l.startswith(('0x','+','-','*')):
        p=l.split()
        if skip:
            skip=False; incl[(fn,cfn)]+=int(p[-1]); continue
        if len(p)>=2 and fn: d[fn]+=int(p[-1])
st=calls['goal_rt::engine::Engine::stash']/n
if st>0.03: print('stash %.2f, retry'%st); sys.exit(1)
tot=sum(d.values())/n
run=sum(v for (a,b),v in incl.items() if b=='GOAL_Run' and a=='main')/n
wait=sum(v for (a,b),v in incl.items() if b=='GOAL_Wait' and a=='main')/n
print('per iteration: total %.0f  Run %.0f  Wait %.0f  progress calls %.2f  stash %.3f'%(tot,run,wait,calls['goal_rt::engine::Engine::progress']/n,st))
rows=sorted(((v/n,k) for k,v in d.items()),reverse=True)
for c,k in rows[:24]: print('%7.1f %6.2f %s'%(c,calls[k]/n,k[:100]))
