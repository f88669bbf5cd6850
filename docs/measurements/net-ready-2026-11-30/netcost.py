#!/usr/bin/env python3
"""netcost.py ways|pinned: the CPU time the emulated network takes per MiB moved between the two
hosts of the cluster "lat" (goal-cluster up --name lat --hosts 2 --rails 1 --rate 1gbit; root),
by plain Python sockets as bench/overlap.py's net_cost does. "ways": one way, then both ways at
once (unpinned), twice; "pinned": one way, the sender on CPU 0 and the receiver on CPU 1, per CPU."""
import os
import subprocess
import sys
import time

MIB = 256
ns = ["goal-lat-h0", "goal-lat-h1"]
addr = ["10.100.0.1", "10.100.0.2"]
def busy():
    v = list(map(int, open("/proc/stat").readline().split()[1:9]))
    return sum(v) - v[3] - v[4]
def prog(me, peer, send, recv, port_in, port_out):
    return f"""
import socket, threading, sys
ls=socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(('{addr[me]}', {port_in})); ls.listen(1)
print('ready', flush=True); sys.stdin.readline()
out=None
if {send}:
    out=socket.create_connection(('{addr[peer]}', {port_out}))
def rx():
    if not {recv}: return
    c,_=ls.accept(); m=memoryview(bytearray(1<<20)); n=0
    while True:
        k=c.recv_into(m)
        if k==0: break
        n+=k
    print('got', n, flush=True)
t=threading.Thread(target=rx); t.start()
print('conn', flush=True); sys.stdin.readline()
if out:
    b=bytes(1<<20)
    for i in range({MIB}): out.sendall(b)
    out.close()
t.join()
"""
def run(both):
    ps=[]
    for me in (0,1):
        send = both or me==0
        recv = both or me==1
        ps.append(subprocess.Popen(["ip","netns","exec",ns[me],"python3","-c",prog(me,1-me,send,recv,6000+me,6000+1-me)],stdin=subprocess.PIPE,stdout=subprocess.PIPE,text=True))
    for p in ps: assert p.stdout.readline().strip()=="ready"
    for p in ps: p.stdin.write("x\n"); p.stdin.flush()
    for p in ps: assert p.stdout.readline().strip()=="conn"
    b0=busy(); t0=time.time()
    for p in ps: p.stdin.write("go\n"); p.stdin.flush()
    for p in ps: p.wait(timeout=200)
    t1=time.time(); b1=busy()
    moved = MIB*(2 if both else 1)
    hz=os.sysconf("SC_CLK_TCK")
    print(("both" if both else "one "), f"{moved} MiB in {t1-t0:.2f} s, cpu {((b1-b0)/hz)/moved*1e6:.0f} us/MiB")

def ways():
    for i in range(2):
        run(False); run(True)

def cpus():
    out = {}
    for l in open("/proc/stat"):
        if l.startswith("cpu") and l[3].isdigit():
            f = l.split(); v = list(map(int, f[1:9]))
            out[f[0]] = (sum(v) - v[3] - v[4], v[5], v[6])  # busy, irq, softirq
    return out
recv = ("import socket\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind(('10.100.0.2', 5999)); s.listen(1); print('ready', flush=True)\n"
        "c,_=s.accept(); m=memoryview(bytearray(1<<20)); n=0\n"
        "while True:\n    k=c.recv_into(m)\n    if k==0: break\n    n+=k\nprint(n)\n")
send = ("import socket, sys\ns=socket.create_connection(('10.100.0.2', 5999)); b=bytes(1<<20)\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        f"for i in range({MIB}): s.sendall(b)\ns.close()\n")
def pinned():
  for i in range(2):
      r = subprocess.Popen(["ip","netns","exec","goal-lat-h1","taskset","-c","1","python3","-c",recv], stdout=subprocess.PIPE, text=True)
      assert r.stdout.readline().strip()=="ready"
      w = subprocess.Popen(["ip","netns","exec","goal-lat-h0","taskset","-c","0","python3","-c",send], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
      assert w.stdout.readline().strip()=="ready"
      a = cpus(); t0=time.time()
      w.stdin.write("go\n"); w.stdin.flush(); w.wait(); r.wait()
      b = cpus(); hz = os.sysconf("SC_CLK_TCK")
      print(f"{time.time()-t0:.2f} s", " ".join(f"{c}: busy {(b[c][0]-a[c][0])/hz/MIB*1e6:.0f} us/MiB (softirq {(b[c][2]-a[c][2])/hz/MIB*1e6:.0f})" for c in sorted(a)))


if __name__ == "__main__":
    {"ways": ways, "pinned": pinned}[sys.argv[1] if len(sys.argv) > 1 else "ways"]()
