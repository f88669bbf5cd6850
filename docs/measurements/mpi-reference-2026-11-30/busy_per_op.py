#!/usr/bin/env python3
"""busy_per_op.py REF_PROGRESS [CLUSTER]: this machine's busy CPU time per operation while
bench/ref_progress.c (built: cc -O2 -pthread -o REF_PROGRESS bench/ref_progress.c) runs its t_pure
loop of 1 MiB bcasts and allreduces between the emulated hosts of CLUSTER (default lat:
goal-cluster up --name lat --hosts 2 --rails 1 --rate 1gbit; root), then the 256 MiB stream's cost
per MiB as the ceiling measures it (../net-ready-2026-11-30/netcost.py), twice. The window is
1.5 s inside the t_pure loop (/proc/stat, machine-wide: the reference's own thread, barrier and
wake-ups included)."""
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "net-ready-2026-11-30"))
import netcost  # noqa: E402

EXE = sys.argv[1]
NS = [f"goal-{sys.argv[2] if len(sys.argv) > 2 else 'lat'}-h{h}" for h in (0, 1)]
WINDOW_S, OP_S = 1.5, 0.00835   # the window, and one 1 MiB operation's t_pure at 1 Gbit/s


def busy() -> int:
    v = list(map(int, open("/proc/stat").readline().split()[1:9]))
    return sum(v) - v[3] - v[4]


def per_op(op: str) -> float:
    peer = subprocess.run(["ip", "netns", "exec", NS[0], "ip", "-4", "-o", "addr", "show", "rail0"],
                          capture_output=True, text=True).stdout.split()[3].split("/")[0]
    args = ["--op", op, "--bytes", str(1 << 20), "--reps", "300"]
    r0 = subprocess.Popen(["ip", "netns", "exec", NS[0], EXE, "--rank", "0", "--cpu", "0", *args],
                          stdout=subprocess.PIPE, text=True)
    r0.stdout.readline()
    r1 = subprocess.Popen(["ip", "netns", "exec", NS[1], EXE, "--rank", "1", "--peer", peer, "--cpu", "1", *args],
                          stdout=subprocess.DEVNULL)
    time.sleep(0.5)   # connected and warmed up; the t_pure loop lasts about 2.5 s
    b0, t0 = busy(), time.time()
    time.sleep(WINDOW_S)
    b1, t1 = busy(), time.time()
    r1.wait()
    r0.wait()
    return (b1 - b0) / os.sysconf("SC_CLK_TCK") / ((t1 - t0) / OP_S) * 1e6


for _ in range(2):
    for op, mib in (("bcast", 1), ("allreduce", 2)):
        us = per_op(op)
        print(f"{op} 1 MiB: {us:.0f} us of CPU per operation ({us / mib:.0f} per MiB moved)")
    netcost.run(False)
