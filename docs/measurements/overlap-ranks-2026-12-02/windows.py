"""windows.py DIR: per rank, what ran on its CPU during the computation of overlap.c's "none"
repetitions (DIR/marks.RANK from marks.patch; rank r pinned to CPU r by --pin) according to a
system-wide perf trace of the same run (DIR/trace.txt, perf script -F cpu,tid,time,event,trace).
Medians over the repetitions (the first 5 left out) of: how long each task was the one running
(interrupts included in it), time in timer interrupts and in each soft interrupt, and how many
times per repetition each hrtimer function expired, each traced system call was entered (by
thread) and each task was switched to."""
import collections
import re
import statistics as S
import sys

d = sys.argv[1]
line = re.compile(r'\s*(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)')
comm = {}
ev = []
for l in open(f"{d}/trace.txt"):
    m = line.match(l)
    if not m:
        continue
    tid, cpu, t, name, rest = int(m[1]), int(m[2]), float(m[3]), m[4], m[5]
    if name == "sched:sched_switch":
        sw = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*next_comm=(.*?) next_pid=(\d+)', rest)
        comm[int(sw[2])], comm[int(sw[4])] = sw[1], sw[3]
    ev.append((t, cpu, tid, name, rest))
ev.sort()
for r in (0, 1):
    marks = [tuple(map(float, l.split())) for l in open(f"{d}/marks.{r}")][5:]
    times, counts = collections.defaultdict(list), collections.defaultdict(list)
    for start, cpu_us, _ in marks:
        a, b = start, start + cpu_us / 1e6
        dur, cnt, open_ = collections.Counter(), collections.Counter(), {}
        cur = None
        for t, c, tid, name, rest in ev:
            if c != r or t < a:
                continue
            if t > b:
                break
            kind = name.split(":")[1]
            if kind.endswith("_entry") and not kind.startswith("hrtimer"):
                key = "softirq " + re.search(r'action=(\w+)', rest)[1] if kind == "softirq_entry" else "timer interrupts"
                open_[kind[:-6]] = (t, key)
            elif kind.endswith("_exit") and kind[:-5] in open_:
                t0, key = open_.pop(kind[:-5])
                dur[key] += t - t0
            elif kind == "hrtimer_expire_entry":
                cnt["hrtimer " + re.search(r'function=(\S+)', rest)[1]] += 1
            elif kind == "sched_switch":
                prev, nxt = re.search(r'prev_comm=(.*?) prev_pid.*next_comm=(.*?) next_pid', rest).groups()
                cnt["switch to " + nxt] += 1
                dur["running " + prev] += t - (cur[1] if cur else a)
                cur = (nxt, t)
            elif kind.startswith("sys_enter"):
                cnt[f"{kind[10:]} by {comm.get(tid, tid)}"] += 1
        if cur:
            dur["running " + cur[0]] += b - cur[1]
        elif not any(k.startswith("running") for k in dur):
            dur["running (no switch)"] += b - a
        for k, v in dur.items():
            times[k].append(v * 1e6)
        for k, v in cnt.items():
            counts[k].append(v)
    n = len(marks)
    med = lambda v: S.median(v + [0] * (n - len(v)))  # noqa: E731
    print(f"rank {r} (CPU {r}): {n} repetitions, computation median {S.median(m[1] for m in marks):.0f} us")
    for k, v in sorted(times.items(), key=lambda x: -med(x[1])):
        if med(v) >= 1:
            print(f"  {med(v):8.0f} us  {k}")
    for k, v in sorted(counts.items(), key=lambda x: -med(x[1])):
        if med(v) >= 1:
            print(f"  {med(v):8.0f} x   {k}")
