#!/usr/bin/env python3
"""What the emulated network itself takes from a computation: the overlap ceiling per rank.

    python3 bench/netfloor.py --cluster NAME [--reps 120] [--windows 3]   # JSON on stdout

The emulated hosts of goal-cluster are network namespaces on this machine's CPUs: their kernels'
TCP, veth, bridge and tbf work (and, in this VM, the exits its timer and network interrupts cost)
runs on the CPUs that the overlap benchmark's ranks compute on, where a real cluster's NICs and
other hosts would do it. bench/overlap.py's net_cost measures that as machine-wide busy time
(/proc/stat) during a stream, which is how docs/measurements/cluster-2026-11-26/ computed its
ceiling. Busy time does not see what the interrupts' exits cost a computation, nor on which CPU
the work lands; IMB's overlap takes the worst rank. This measures it the way the benchmark sees it:

  - a busy loop pinned to each CPU counts its work rate, alone and while
  - the least a TCP user can do moves one operation's bytes between the hosts, again and again:
    rank r's processes pinned to CPU r (as overlap.c --pin pins rank r), the sender one sendall of
    the whole message, the receiver poll and non-blocking reads with the receive low-water mark at
    the rest of the message (woken once, not per segment), then a 1-byte acknowledgement, and the
    next message. "bcast": 1 message from host 0 to host 1; "allreduce": one each way at once
    (what 2 ranks' allreduce moves at the least).

  lost per CPU and operation = (window - work done in the window / work rate alone) / operations,
  the median over --windows windows, each framed by 1 s of the loops alone. A computation on that
  CPU cannot lose less to any library that moves the same bytes over this network, so for an
  operation of t_pure us the overlap ceiling is 100 (1 - worst CPU's loss / t_pure).
"""
from __future__ import annotations

import argparse
import array
import bisect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import overlap as O  # noqa: E402

MiB = 1 << 20
PATTERNS = {"bcast": [(0, 1)], "allreduce": [(0, 1), (1, 0)]}
BASE_S = 1.0        # the loops alone before and after each window
STALL_S = 20        # a transfer that moves nothing for this long fails its window (no hang)
PORT = 6100
REPS, WINDOWS = 120, 5

# A busy loop on one CPU: a timestamp (monotonic, the harness's clock) after every few us of work.
LOOP = r'''
import array, os, sys, time
os.sched_setaffinity(0, {%(cpu)d})
end = time.monotonic() + %(secs)f
ts = array.array('d'); x = 0
while True:
    for i in range(400): x += i
    t = time.monotonic(); ts.append(t)
    if t > end: break
sys.stdout.buffer.write(ts.tobytes())
'''

# The receiver: poll, then non-blocking reads; SO_RCVLOWAT at the rest of the message.
RECV = r'''
import os, select, socket, sys
os.sched_setaffinity(0, {%(cpu)d})
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('%(addr)s', %(port)d)); s.listen(1); print('ready', flush=True)
s.settimeout(%(timeout)d); c, _ = s.accept(); c.setblocking(False)
m = memoryview(bytearray(%(size)d)); p = select.poll(); p.register(c, select.POLLIN); lw = 1
while True:
    n = 0
    while n < %(size)d:
        want = %(size)d - n
        if want != lw:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, want); lw = want
        if not p.poll(%(timeout)d * 1000):
            sys.exit('netfloor: no data for %(timeout)d s')
        while n < %(size)d:
            try:
                k = c.recv_into(m[n:])
            except BlockingIOError:
                break
            if k == 0:
                sys.exit(0)
            n += k
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1); lw = 1
    c.setblocking(True); c.sendall(b'a'); c.setblocking(False)
'''

# The sender: one sendall per message, then wait for its acknowledgement.
SEND = r'''
import os, socket, struct, sys, time
os.sched_setaffinity(0, {%(cpu)d})
s = socket.create_connection(('%(addr)s', %(port)d), timeout=%(timeout)d); b = bytes(%(size)d)
# Blocking calls, as measured, but none that waits forever: the kernel's own timeouts.
s.settimeout(None); tv = struct.pack('ll', %(timeout)d, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
print('ready', flush=True); sys.stdin.readline()
for i in range(%(reps)d):
    s.sendall(b)
    if s.recv(1) != b'a': sys.exit(1)
print(time.monotonic(), flush=True)
'''


def rail_addrs(cname: str) -> list[str] | None:
    addrs = [O.rail_addr(f"goal-{cname}-h{h}") for h in (0, 1)]
    return None if None in addrs else addrs


def window(cname: str, addrs: list[str], pattern: str, cpus: list[int], reps: int, size: int,
           port: int) -> list[float] | None:
    """One window: us each CPU lost per operation, or None if a transfer failed."""
    procs, senders, loops = [], [], []
    try:
        for k, (a, b) in enumerate(PATTERNS[pattern]):
            ns = f"goal-{cname}-h"
            args = dict(addr=addrs[b], port=port + k, size=size, reps=reps, timeout=STALL_S)
            r = subprocess.Popen(["ip", "netns", "exec", ns + str(b), sys.executable, "-c", RECV % dict(args, cpu=cpus[b])],
                                 stdout=subprocess.PIPE, text=True)
            procs.append(r)
            if r.stdout.readline().strip() != "ready":
                return None
            w = subprocess.Popen(["ip", "netns", "exec", ns + str(a), sys.executable, "-c", SEND % dict(args, cpu=cpus[a])],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(w)
            senders.append(w)
            if w.stdout.readline().strip() != "ready":
                return None
        # The loops outlast the transfers by BASE_S at the least (a generous guess at 1 Gbit/s).
        secs = 2 * BASE_S + reps * len(senders) * size * 8 / 0.5e9 + 1.0
        loops += [subprocess.Popen([sys.executable, "-c", LOOP % dict(cpu=c, secs=secs)], stdout=subprocess.PIPE)
                  for c in sorted(set(cpus))]
        time.sleep(BASE_S)
        t0 = time.monotonic()
        for w in senders:
            w.stdin.write("go\n")
            w.stdin.flush()
        t1 = max(float(w.stdout.readline()) for w in senders)
        stamps = []
        for p in loops:
            ts = array.array("d")
            ts.frombytes(p.communicate(timeout=secs + 60)[0])
            stamps.append(ts)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    finally:
        for p in procs + loops:
            if p.poll() is None:
                p.kill()
            p.wait()
    by_cpu = dict(zip(sorted(set(cpus)), stamps))
    lost = []
    for c in cpus:
        ts = by_cpu[c]
        if len(ts) < 2 or ts[-1] < t1 + BASE_S / 2:
            return None
        count = lambda lo, hi: bisect.bisect_left(ts, hi) - bisect.bisect_left(ts, lo)  # noqa: E731
        # The work rate alone: both margins, a little away from the window's edges and the loop's start.
        edge = 0.05
        alone_t = (t0 - edge - ts[0] - 0.1) + (ts[-1] - t1 - 2 * edge)
        rate = (count(ts[0] + 0.1, t0 - edge) + count(t1 + edge, ts[-1] - edge)) / alone_t
        lost.append(((t1 - t0) - count(t0, t1) / rate) / reps * 1e6)
    return lost


def measure(cname: str, ncpu: int, reps: int = REPS, windows: int = WINDOWS, size: int = MiB) -> dict | None:
    """{"bytes", "reps", "ops": {pattern: {"lost_us_by_cpu": [median per CPU], "windows": [...]}}}:
    CPU r is rank r's (host r's) CPU. None if the hosts have no addresses or every window failed."""
    addrs = rail_addrs(cname)
    if addrs is None:
        return None
    cpus = [0, 1 % ncpu]
    ops = {}
    for i, pattern in enumerate(PATTERNS):
        got = [w for k in range(windows)
               if (w := window(cname, addrs, pattern, cpus, reps, size, PORT + 10 * (i * windows + k))) is not None]
        if not got:
            return None
        ops[pattern] = {"lost_us_by_cpu": [round(C.median(col), 1) for col in zip(*got)],
                        "windows": [[round(v, 1) for v in w] for w in got]}
    return {"bytes": size, "reps": reps, "cpus": cpus, "ops": ops}


def ceiling_pct(floor: dict | None, op: str, nbytes: int, t_pure_us) -> float | None:
    """100 (1 - the worst CPU's loss / t_pure) where the floor was measured for op and size."""
    e = (floor or {}).get("ops", {}).get(op)
    if not e or floor.get("bytes") != nbytes or not C.isnum(t_pure_us) or t_pure_us <= 0:
        return None
    return max(0.0, 100 * (1 - max(e["lost_us_by_cpu"]) / t_pure_us))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--cluster", required=True, help="a goal-cluster name (goal-cluster up --name NAME)")
    ap.add_argument("--reps", type=int, default=REPS, help=f"operations per window (default {REPS})")
    ap.add_argument("--windows", type=int, default=WINDOWS, help=f"windows per operation (default {WINDOWS})")
    a = ap.parse_args()
    got = measure(a.cluster, os.cpu_count() or 1, a.reps, a.windows)
    if got is None:
        print(f"netfloor: no measurement on cluster {a.cluster!r} (is it up, with rail0 on hosts 0 and 1?)",
              file=sys.stderr)
        return 1
    print(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
