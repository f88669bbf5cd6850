"""Contention as a condition of a benchmark run: the drivers' --noise (bench/p2p.py, coll.py).

    --noise busy,detour:100us/1ms     # a list, or the option repeated
    --noise all                       # none, busy, detour:100us/1ms, detour:25us/250us, oversub

Each kind is a condition the whole measurement runs under, every library (peers included)
in the same rounds, one condition after the other; rows and runs carry "noise", and the
driver summarizes, reports and plots each condition on its own (OUT.png for "none", else
OUT-noise-KIND.png), since libraries are compared within a condition, never across; with
several, OUT-noise.png sets each target's ratio (goal / best peer) side by side per condition.

  none               a quiet machine (the drivers' usual run)
  busy               `goal noise busy`: one CPU-bound thread beside the job, not pinned
  detour:D/P         `goal noise detour:D/P`: on every CPU a thread pinned there that wakes
                     every P (absolute deadlines) and spins D: periodic OS noise
  oversub            no process: the job gets half as many CPUs as it has ranks (at least
                     one; `taskset -c` on the launcher, the programs' own --pin dropped), so
                     2 ranks share one CPU and 4 ranks two; Open MPI gets --oversubscribe

A noise process starts right before each run (after the idle wait and the CPU probe) and is
stopped right after it (SIGTERM); its report (what it injected: CPU seconds, periods run and
missed) goes into the run's record. Its CPU time counts as the benchmark's own, not as
foreign use that would make the driver repeat the run. The generator is goal's: `goal noise`
(crates/goal-cli/src/tool/noise.rs), found as GOAL_TOOL (set by `goal bench`), else
PREFIX/bin/goal, else this tree's target/release/goal, else `goal` on PATH.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import common as C

ALL = ["none", "busy", "detour:100us/1ms", "detour:25us/250us", "oversub"]
_DETOUR = re.compile(r"^detour:\d+(\.\d+)?(ns|us|ms|s)/\d+(\.\d+)?(ns|us|ms|s)$")


def add_args(ap) -> None:
    ap.add_argument("--noise", action="append", default=[], metavar="KIND[,KIND...]",
                    help="run the whole measurement under each of these conditions in turn: none, busy, "
                         "detour:D/P (e.g. detour:100us/1ms), oversub, or all (bench/noise.py); "
                         "repeatable (default: none)")


def kinds(a) -> list[str]:
    """The conditions --noise asks for, in order, validated (SystemExit with the bad one)."""
    out: list[str] = []
    for spec in a.noise or ["none"]:
        for k in (x.strip() for x in spec.split(",")):
            if not k:
                continue
            for kind in (ALL if k == "all" else [k]):
                if kind not in ("none", "busy", "oversub") and not _DETOUR.match(kind):
                    C.die(f"--noise: unknown kind '{kind}': none, busy, detour:D/P (as detour:100us/1ms), "
                          "oversub or all", 2)
                if kind not in out:
                    out.append(kind)
    return out or ["none"]


def suffix(kind: str) -> str:
    """The output name's part for a condition: '' for none, '-noise-detour-100us-1ms' else."""
    return "" if kind == "none" else "-noise-" + re.sub(r"[^A-Za-z0-9]+", "-", kind).strip("-")


def goal_tool(prefix: Path | None) -> str | None:
    """The goal executable that provides `goal noise`."""
    cands = [os.environ.get("GOAL_TOOL"), str(prefix / "bin" / "goal") if prefix else None,
             str(C.REPO / "target" / "release" / "goal"), shutil.which("goal")]
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def oversub_cpus(ranks: int) -> list[int]:
    """The CPUs an oversubscribed job of `ranks` ranks gets: half as many as ranks, at least one."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[:max(1, min(len(allowed), ranks // 2))]


def wrap(kind: str, cmd: list[str], ranks: int) -> list[str]:
    """`cmd` as run under `kind`: unchanged but for oversub (see the module's doc)."""
    if kind != "oversub":
        return cmd
    cmd = [x for x in cmd if x != "--pin"]
    if "openmpi" in Path(cmd[0]).name and "--oversubscribe" not in cmd:
        cmd = [cmd[0], "--oversubscribe", *cmd[1:]]
    taskset = shutil.which("taskset")
    if not taskset:
        C.die("--noise oversub needs taskset (util-linux), which is not on PATH")
    return [taskset, "-c", ",".join(map(str, oversub_cpus(ranks))), *cmd]


class Running:
    """`with Running(kind, tool):` the noise of `kind` runs for the block; `.report` is then
    what it injected (for none and oversub: {"noise": kind} and the CPUs of oversub)."""

    def __init__(self, kind: str, tool: str | None, ranks: int = 2):
        self.kind, self.tool, self.proc = kind, tool, None
        self.report: dict = {"noise": kind}
        if kind == "oversub":
            self.report["cpus"] = oversub_cpus(ranks)

    def __enter__(self) -> "Running":
        if self.kind in ("none", "oversub"):
            return self
        if not self.tool:
            C.die("--noise needs `goal noise`: no goal executable found (GOAL_TOOL, PREFIX/bin/goal, "
                  "target/release/goal, PATH)")
        self.proc = subprocess.Popen([self.tool, "noise", self.kind], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        ready = self.proc.stdout.readline()
        if '"ready": true' not in ready:
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self._stop()
            C.die(f"`{self.tool} noise {self.kind}` did not start: {ready.strip()} {err.strip()}")
        return self

    def _stop(self) -> str:
        p, self.proc = self.proc, None
        if p is None:
            return ""
        try:
            p.send_signal(signal.SIGTERM)
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        return out or ""

    def __exit__(self, *exc) -> bool:
        t0 = time.monotonic()
        for line in self._stop().splitlines():
            if line.startswith("{") and '"ready"' not in line:
                try:
                    self.report.update(json.loads(line))
                except json.JSONDecodeError:
                    pass
        self.report["stop_s"] = round(time.monotonic() - t0, 3)
        return False


def condition_note(kind: str, runs) -> str | None:
    """What the noise of `kind` injected over its runs, from their reports, for the notes."""
    reps = [r.get("noise_report") or {} for r in runs if r.get("noise") == kind]
    cpu = [x["cpu_s"] for x in reps if C.isnum(x.get("cpu_s"))]
    exp = [x["expected_cpu_s"] for x in reps if C.isnum(x.get("expected_cpu_s"))]
    if kind == "oversub":
        cpus = sorted({str(x.get("cpus")) for x in reps if x.get("cpus")})
        return (f"noise oversub: each job on CPUs {' or '.join(cpus)} (taskset; half as many CPUs as ranks, "
                "the programs' --pin off)")
    if not cpu:
        return None
    missed = sum(x.get("missed", 0) for x in reps)
    periods = sum(x.get("periods", 0) for x in reps)
    return (f"noise {kind}: {sum(cpu):.2f} s of CPU injected over {len(reps)} runs, {sum(exp):.2f} s promised"
            + (f"; {missed} of {periods + missed} periods missed (late wake-ups)" if periods + missed else ""))


def write(out: Path, benchmark: str, a, machine: dict, results: dict) -> Path:
    """OUT.json: the one condition's result as the driver always wrote it (with "noise"), or,
    with several, {"benchmark", "noise": [kinds], "args", "machine", "conditions": {kind: result}}."""
    path = out.with_suffix(".json")
    if list(results) == ["none"]:
        C.write_json(path, results["none"])
    else:
        C.write_json(path, {"benchmark": benchmark, "noise": list(results),
                            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
                            "machine": machine, "conditions": results})
    print(f"wrote {path}")
    if len(results) > 1 and plot_conditions(Path(f"{out}-noise.png"), benchmark, results):
        print(f"wrote {out}-noise.png")
    return path


def _label(t: dict) -> str:
    size = C.fmt_bytes(t["bytes"]) if t.get("bytes") else ""
    if "coll" in t:
        return f"{t['ranks']} ranks {t['coll']} {size}".strip()
    who = "" if t.get("lib", "goal") == "goal" else f" ({t['lib']})"
    return f"{t['section']} {size}{who}".strip() + (" [higher is better]" if t["relation"] == ">=" else "")


def plot_conditions(path: Path, benchmark: str, results: dict) -> bool:
    """OUT-noise.png: every ratio target of goal against its peer (the value the driver judged,
    goal / best peer), one marker per condition, each target's bound a black bar: how each kind
    of contention moves goal against the peers."""
    rows: dict[str, dict[str, tuple[float, float]]] = {}
    for kind, res in results.items():
        for t in res.get("targets") or []:
            if t.get("relation") in ("<=", ">=") and t.get("unit", "x") == "x" and C.isnum(t.get("value")) \
                    and t["value"] > 0:
                rows.setdefault(_label(t), {})[kind] = (t["value"], t["bound"])
    plt = C.pyplot()
    if plt is None or not rows:
        return False
    labels = list(rows)
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(labels) + 1.8), constrained_layout=True)
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    for k, kind in enumerate(results):
        ys = [i + (k - (len(results) - 1) / 2) * 0.12 for i, lab in enumerate(labels) if kind in rows[lab]]
        xs = [rows[lab][kind][0] for lab in labels if kind in rows[lab]]
        ax.scatter(xs, ys, label=kind, marker=markers[k % len(markers)], s=28, zorder=3)
    for i, lab in enumerate(labels):
        bound = next(iter(rows[lab].values()))[1]
        ax.plot([bound, bound], [i - 0.4, i + 0.4], color="black", linewidth=1.2)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("goal / best peer (black bar: the target's bound)")
    ax.set_title(f"goal bench {benchmark}: the targets under each --noise condition")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
