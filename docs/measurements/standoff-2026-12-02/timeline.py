#!/usr/bin/env python3
"""timeline.py OUT COLL [N]: the first N (default 3) "crossed" iterations of a trace.sh run, each as
a timeline of the ranks' starts and ends, their CPU switches, CMA reads and yields (us from the
iteration's first start), and a count of the iterations by kind: "together" (mean of the 4
ranks' times under 8 us), "crossed" (8 to 16 us), other. Ranks are numbered by process id,
which goalrun gives in rank order."""
import collections
import re
import sys

base, coll = sys.argv[1], sys.argv[2]
show = int(sys.argv[3]) if len(sys.argv) > 3 else 3
line = re.compile(r"^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\S+?)(?:[:(]| ->)\s*(.*)$")
events = []
for text in open(base + ".trace"):
    m = line.match(text)
    if m:
        _, pid, cpu, ts, name, rest = m.groups()
        events.append((float(ts), int(cpu), int(pid), name, rest))
reads = collections.Counter(p for _, _, p, n, r in events if n == "sys_process_vm_readv" and not r.startswith("0x"))
rank_of = {p: i for i, p in enumerate(sorted(p for p, _ in reads.most_common(4)))}
times = [[tuple(map(float, t.split())) for t in open(f"{base}-{coll}-r{r}.txt")] for r in range(4)]
kinds, shown = collections.Counter(), 0
for i in range(len(times[0])):
    took = [(times[r][i][1] - times[r][i][0]) * 1e6 for r in range(4)]
    mean = sum(took) / 4
    kind = "together" if mean < 8 else "crossed" if mean < 16 else "other"
    kinds[kind] += 1
    if kind != "crossed" or shown >= show or i < 50:
        continue
    shown += 1
    t0 = min(times[r][i][0] for r in range(4))
    t1 = max(times[r][i][1] for r in range(4))
    print(f"--- iteration {i}: " + " ".join(f"rank {r} {took[r]:.1f} us" for r in range(4)))
    marks = [(times[r][i][k], f"rank {r} {'start' if k == 0 else 'end'}") for r in range(4) for k in (0, 1)]
    for t, cpu, pid, name, rest in events:
        if not t0 - 3e-6 <= t <= t1 + 1e-6:
            continue
        who = f"rank {rank_of[pid]}" if pid in rank_of else str(pid)
        if name == "sched_switch":
            m = re.search(r"prev_pid=(\d+).*next_comm=(\S+) next_pid=(\d+)", rest)
            a, b = int(m.group(1)), int(m.group(3))
            to = f"rank {rank_of[b]}" if b in rank_of else m.group(2)
            marks.append((t, f"  CPU {cpu}: {'rank %d' % rank_of[a] if a in rank_of else a} -> {to}"))
        elif name == "sys_process_vm_readv":
            marks.append((t, f"  CPU {cpu}: {who} CMA read {'ends' if rest.startswith('0x') else 'starts'}"))
        elif name == "sys_sched_yield":
            marks.append((t, f"  CPU {cpu}: {who} yields"))
    for t, what in sorted(marks):
        print(f"{(t - t0) * 1e6:7.2f}  {what}")
print(dict(kinds))
