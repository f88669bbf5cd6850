"""Shared helpers of goal's benchmark harnesses (bench/p2p.py and later ones).

Running commands with timeouts, finding both MPIs, building MPI and goal programs,
machine facts, medians, JSON rows, text tables and matplotlib plots.
Standard library only, except matplotlib (imported lazily, optional).
"""
from __future__ import annotations

import json
import math
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "bench"
BENCH = REPO / "bench"

VERBOSE = False


# ---------------------------------------------------------------------------------------
# messages

def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def warn(msg: str) -> None:
    print(f"WARNING: {msg}", file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    """A failure that should stop the harness with a clear message."""


def die(msg: str, code: int = 1) -> "None":
    print(f"ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


# ---------------------------------------------------------------------------------------
# running commands

@dataclass
class Result:
    cmd: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    def describe(self, tail: int = 30) -> str:
        what = f"timed out after {self.seconds:.0f} s" if self.timed_out else f"exit code {self.rc}"
        lines = (self.stderr.strip() or self.stdout.strip()).splitlines()[-tail:] if tail > 0 else []
        out = f"`{shlex.join(self.cmd)}` {what}"
        if lines:
            out += "\n    " + "\n    ".join(lines)
        return out


def run(cmd: Sequence[str], *, env: dict | None = None, timeout: float = 600,
        cwd: Path | str | None = None, check: bool = False) -> Result:
    """Run cmd in its own process group; on timeout, kill that group (and only it)."""
    cmd = [str(c) for c in cmd]
    full_env = dict(os.environ)
    if env:
        full_env.update({k: str(v) for k, v in env.items()})
    if VERBOSE:
        pre = " ".join(f"{k}={v}" for k, v in (env or {}).items())
        log(f"+ {pre + ' ' if pre else ''}{shlex.join(cmd)}")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=full_env, cwd=cwd, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = p.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            out, err = "", ""
    res = Result(cmd, p.returncode if p.returncode is not None else -9, out or "", err or "",
                 time.monotonic() - t0, timed_out)
    if check and not res.ok:
        raise BenchError(res.describe())
    return res


def capture(cmd: Sequence[str], default: str = "") -> str:
    """First line-ish output of a quick informational command, or default."""
    try:
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=20)
        return (r.stdout or r.stderr).strip() if r.returncode == 0 else default
    except (OSError, subprocess.SubprocessError):
        return default


# ---------------------------------------------------------------------------------------
# JSON rows

def parse_rows(text: str) -> list[dict]:
    """Every line of text that is a JSON object."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return rows


def out_base(out: str) -> Path:
    """A driver's --out as an absolute path without extension (.json and .png are added)."""
    p = Path(out)
    p = p if p.is_absolute() else Path.cwd() / p
    return p.with_suffix("") if p.suffix in (".json", ".png") else p


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)


# ---------------------------------------------------------------------------------------
# statistics

def median(xs: Iterable[float]) -> float:
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else float("nan")


def spread(xs: Iterable[float]) -> tuple[float, float]:
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else (float("nan"), float("nan"))


def isnum(x) -> bool:
    return isinstance(x, (int, float)) and not (isinstance(x, float) and math.isnan(x))


# ---------------------------------------------------------------------------------------
# sizes

def parse_size(s: str) -> int:
    """Bytes of "8", "64K", "1M", "1MiB" or "64KB" (ValueError otherwise)."""
    s = s.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1:], 1)
    return int(s[:-1] if mult > 1 else s) * mult


def fmt_bytes(n: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def fmt_bytes_short(n: int) -> str:
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def fmt_num(x, digits: int = 3) -> str:
    if not isnum(x):
        return "-"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.1f}"
    if a >= 10:
        return f"{x:.2f}"
    return f"{x:.{digits}f}"


# ---------------------------------------------------------------------------------------
# text tables

def table(headers: Sequence[str], rows: Sequence[Sequence], aligns: str | None = None) -> str:
    """Plain-text table; aligns is one char per column, 'l' or 'r' (default: first l, rest r)."""
    cells = [[str(h) for h in headers]] + [[("-" if c is None else str(c)) for c in r] for r in rows]
    n = len(headers)
    aligns = aligns or ("l" + "r" * (n - 1))
    widths = [max(len(r[i]) for r in cells) for i in range(n)]

    def line(r):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, aligns)).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# machine facts

def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_stat() -> dict:
    """Aggregate CPU jiffies from /proc/stat (for steal/busy during a run)."""
    for line in _read("/proc/stat").splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
            return dict(zip(names, v + [0] * (len(names) - len(v))))
    return {}


def cpu_stat_delta(a: dict, b: dict) -> dict:
    if not a or not b:
        return {}
    d = {k: b[k] - a[k] for k in a}
    tot = sum(d.values()) or 1
    return {"steal_pct": round(100.0 * d.get("steal", 0) / tot, 2),
            "idle_pct": round(100.0 * (d.get("idle", 0) + d.get("iowait", 0)) / tot, 2)}


def busy_fraction(sample_s: float = 0.3) -> float:
    """Fraction of all CPUs' time that was busy (not idle/iowait) over sample_s."""
    a = cpu_stat()
    time.sleep(sample_s)
    b = cpu_stat()
    if not a or not b:
        return 0.0
    d = {k: b[k] - a[k] for k in a}
    tot = sum(d.values()) or 1
    return 1.0 - (d.get("idle", 0) + d.get("iowait", 0)) / tot


def wait_for_idle(max_wait_s: float, threshold: float = 0.10) -> tuple[bool, float]:
    """Wait (up to max_wait_s) until the machine is idle: busy fraction below threshold.
    Returns (idle, seconds waited)."""
    t0 = time.monotonic()
    while True:
        if busy_fraction() < threshold:
            return True, time.monotonic() - t0
        if time.monotonic() - t0 >= max_wait_s:
            return False, time.monotonic() - t0


# Stands for the separator's file (bench/separator.h) in a benchmark program's arguments;
# SeparatorFile.put_in gives each run a new one.
SEP_FILE = "@SEP_FILE@"


class SeparatorFile:
    """A page of zeros (in /dev/shm where it exists) for the separator of one run of
    bench/goal_coll.c or bench/mpi_coll.c, removed afterwards."""

    def __enter__(self) -> "SeparatorFile":
        d = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, self.path = tempfile.mkstemp(prefix="goal-bench-sep.", dir=d)
        try:
            os.write(fd, bytes(4096))
        finally:
            os.close(fd)
        return self

    def put_in(self, cmd: list) -> list:
        """`cmd` with SEP_FILE replaced by this file's path."""
        return [self.path if x == SEP_FILE else x for x in cmd]

    def __exit__(self, *exc) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


class CpuMeter:
    """CPU use of the whole machine during a block, split into ours (this process and
    its waited-for children, i.e. the benchmark ranks) and foreign (everything else:
    another build, the host stealing time)."""

    def __enter__(self):
        self.st0, self.t0, self.w0 = cpu_stat(), os.times(), time.monotonic()
        return self

    def __exit__(self, *exc):
        st1, t1 = cpu_stat(), os.times()
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        d = {k: st1[k] - self.st0[k] for k in self.st0} if self.st0 and st1 else {}
        tot = sum(d.values()) or 1
        busy = tot - d.get("idle", 0) - d.get("iowait", 0)
        ours = ((t1.user - self.t0.user) + (t1.system - self.t0.system)
                + (t1.children_user - self.t0.children_user)
                + (t1.children_system - self.t0.children_system)) * hz
        self.result = {
            "steal_pct": round(100.0 * d.get("steal", 0) / tot, 2),
            "busy_pct": round(100.0 * busy / tot, 1),
            "foreign_pct": round(max(0.0, 100.0 * (busy - ours) / tot), 1),
        }
        return False


def loadavg() -> list[float]:
    try:
        return [float(x) for x in _read("/proc/loadavg").split()[:3]]
    except ValueError:
        return []


def busy_processes(min_pct: float = 20.0) -> list[str]:
    """Other processes using much CPU right now (to explain noisy results)."""
    out = capture(["ps", "-eo", "pid,pcpu,comm", "--sort=-pcpu", "--no-headers"])
    me = os.getpid()
    busy = []
    for line in out.splitlines()[:10]:
        parts = line.split(None, 2)
        if len(parts) == 3:
            try:
                pid, pct = int(parts[0]), float(parts[1])
            except ValueError:
                continue
            if pid != me and pct >= min_pct:
                busy.append(f"{parts[2]}({pid}) {pct:.0f}%")
    return busy


def machine_info() -> dict:
    cpu_model = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    m = re.search(r"MemTotal:\s+(\d+)", _read("/proc/meminfo"))
    if m:
        mem_kb = int(m.group(1))
    virt = capture(["systemd-detect-virt"], "") or ("hypervisor" if "hypervisor" in _read("/proc/cpuinfo") else "")
    return {
        "hostname": socket.gethostname(),
        "nproc": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "kernel": platform.release(),
        "os": (re.search(r'PRETTY_NAME="([^"]*)"', _read("/etc/os-release")) or [None, ""])[1],
        "cpu_model": cpu_model,
        "mem_gib": round(mem_kb / (1 << 20), 1),
        "virtualization": virt,
        "loadavg_start": loadavg(),
        "cc": capture(["cc", "--version"]).splitlines()[0] if capture(["cc", "--version"]) else "",
        "python": platform.python_version(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


# ---------------------------------------------------------------------------------------
# MPIs

@dataclass
class MPI:
    name: str         # "openmpi" | "mpich"
    mpicc: str
    mpirun: str
    version: str = ""

    def launch(self, n: int, prog: Sequence[str], *, mca: dict | None = None,
               bind: str = "none") -> tuple[list[str], dict]:
        """Command and environment to start n ranks of prog with this MPI."""
        env: dict = {}
        if self.name == "openmpi":
            cmd = [self.mpirun, "-n", str(n), "--bind-to", bind]
            if os.geteuid() == 0:
                cmd.insert(1, "--allow-run-as-root")
            if (os.cpu_count() or 1) < n:
                cmd.insert(1, "--oversubscribe")
            for k, v in (mca or {}).items():
                cmd += ["--mca", k, str(v)]
        else:
            cmd = [self.mpirun, "-n", str(n), "-bind-to", bind]
            if mca:
                raise BenchError("MCA parameters are Open MPI only")
        return cmd + [str(p) for p in prog], env


def _read_mpi_env() -> dict:
    """KEY=VALUE lines written by scripts/install-deps.sh into scripts/mpi-env.sh."""
    f = REPO / "scripts" / "mpi-env.sh"
    out = {}
    for line in _read(str(f)).splitlines():
        m = re.match(r"^(GOAL_\w+)=(\S+)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _alternatives(name: str) -> list[str]:
    return capture(["update-alternatives", "--list", name]).splitlines()


def find_mpis() -> dict[str, MPI]:
    """Open MPI and MPICH, found by explicit names (never the bare `mpicc`).

    Order: $GOAL_<FLAVOUR>_MPICC/_MPIRUN in the environment, scripts/mpi-env.sh,
    /usr/bin/mpicc.<flavour>, update-alternatives candidates."""
    fileenv = _read_mpi_env()
    found: dict[str, MPI] = {}
    for name, key in (("openmpi", "OMPI"), ("mpich", "MPICH")):
        tools = {}
        for tool in ("mpicc", "mpirun"):
            cands = [os.environ.get(f"GOAL_{key}_{tool.upper()}"), fileenv.get(f"GOAL_{key}_{tool.upper()}"),
                     f"/usr/bin/{tool}.{name}", shutil.which(f"{tool}.{name}")]
            cands += [c for c in _alternatives(tool) if name in c]
            if tool == "mpirun":
                cands += [f"/usr/bin/mpiexec.{name}"]
            tools[tool] = next((c for c in cands if c and os.access(c, os.X_OK)), None)
        if tools["mpicc"] and tools["mpirun"]:
            found[name] = MPI(name, tools["mpicc"], tools["mpirun"])
    return found


# ---------------------------------------------------------------------------------------
# building

CFLAGS = ["-O2", "-g", "-Wall", "-Wextra"]


def _newer(out: Path, inputs: Iterable[Path]) -> bool:
    if not out.exists():
        return False
    t = out.stat().st_mtime
    return all(p.stat().st_mtime <= t for p in inputs if p.exists())


def build_mpi_program(mpi: MPI, src: Path, out: Path, extra_deps: Sequence[Path] = ()) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if _newer(out, [src, *extra_deps, Path(mpi.mpicc)]):
        return out
    run([mpi.mpicc, *CFLAGS, "-o", out, src], timeout=300, check=True)
    return out


def build_with_each_mpi(src: Path, stem: str, extra_deps: Sequence[Path] = ()) -> dict[str, tuple[MPI, Path]]:
    """src built with each MPI found (BUILD/STEM.openmpi, BUILD/STEM.mpich): name -> (MPI,
    program); an MPI that is missing or fails to build it is left out with a warning."""
    mpis = find_mpis()
    for name in ("openmpi", "mpich"):
        if name not in mpis:
            warn(f"{name} not found (run scripts/install-deps.sh); continuing without it")
    built = {}
    for name, mpi in mpis.items():
        try:
            built[name] = (mpi, build_mpi_program(mpi, src, BUILD / f"{stem}.{name}", extra_deps))
        except BenchError as e:
            warn(f"{name}: build failed, skipping it:\n{e}")
    return built


def build_c_program(src: Path, out: Path, extra: Sequence[str] = (), extra_deps: Sequence[Path] = ()) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if _newer(out, [src, *extra_deps]):
        return out
    run(["cc", *CFLAGS, "-o", out, src, *extra], timeout=300, check=True)
    return out


@dataclass
class Goal:
    prefix: Path
    goalrun: Path
    cflags: list[str] = field(default_factory=list)
    libs: list[str] = field(default_factory=list)
    version: str = ""

    @property
    def pkg_env(self) -> dict:
        return {"PKG_CONFIG_PATH": str(self.prefix / "lib" / "pkgconfig")}


def find_goal(prefix: Path) -> Goal:
    """goal installed by `make install PREFIX=prefix`; raises BenchError with the reason."""
    prefix = prefix.resolve()
    pc = prefix / "lib" / "pkgconfig" / "goal.pc"
    goalrun = prefix / "bin" / "goalrun"
    problems = [f"{p} is missing" for p in (pc, goalrun, prefix / "include" / "goal.h") if not p.exists()]
    if problems:
        raise BenchError("goal is not installed under %s: %s" % (prefix, "; ".join(problems)))
    env = {"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    r = run(["pkg-config", "--cflags", "goal"], env=env, timeout=30)
    r2 = run(["pkg-config", "--libs", "goal"], env=env, timeout=30)
    if not (r.ok and r2.ok):
        raise BenchError("pkg-config goal failed: " + (r.describe() if not r.ok else r2.describe()))
    ver = run(["pkg-config", "--modversion", "goal"], env=env, timeout=30).stdout.strip()
    return Goal(prefix, goalrun, shlex.split(r.stdout), shlex.split(r2.stdout), ver)


def build_goal_program(goal: Goal, src: Path, out: Path, extra_deps: Sequence[Path] = ()) -> Path:
    """cc src $(pkg-config --cflags --libs goal) -Wl,-rpath,PREFIX/lib; always rebuilt
    (the library under PREFIX may have changed). Raises BenchError with the compiler output."""
    out.parent.mkdir(parents=True, exist_ok=True)
    libdir = goal.prefix / "lib"
    cmd = ["cc", *CFLAGS, *goal.cflags, "-o", out, src, *goal.libs, f"-Wl,-rpath,{libdir}"]
    r = run(cmd, timeout=300)
    if not r.ok:
        lines = r.stderr.strip().splitlines()
        more = f"\n    ... ({len(lines) - 40} more lines)" if len(lines) > 40 else ""
        raise BenchError("building %s against goal failed:\n%s\n%s%s" % (
            src.name, shlex.join(map(str, cmd)), "\n".join(lines[:40]), more))
    return out


# ---------------------------------------------------------------------------------------
# core-to-core probe (bench/c2c.c)

def cpu_probe(cpus: tuple[int, int] = (0, 1)) -> dict:
    """The state of two CPUs (bench/c2c.c): one-way cache-line latency in ns ("oneway_ns") and
    how much slower the slower CPU computes than the faster one alone ("cpu_ratio"); {} if the
    probe cannot run."""
    if (os.cpu_count() or 1) < 2:
        return {}
    exe = BUILD / "c2c"
    try:
        build_c_program(BENCH / "c2c.c", exe, ["-pthread"])
    except BenchError as e:
        warn(f"c2c probe unavailable: {e}")
        return {}
    r = run([exe, str(cpus[0]), str(cpus[1])], timeout=60)
    rows = parse_rows(r.stdout) if r.ok else []
    return rows[0] if rows else {}


def c2c_probe(cpus: tuple[int, int] = (0, 1)) -> float | None:
    """One-way cache-line latency between two CPUs in ns, or None."""
    return cpu_probe(cpus).get("oneway_ns")


def cpu_ratio_note(runs) -> str | None:
    """What the runs' cpu_ratio probes (see `cpu_probe`) saw, if they varied enough to matter."""
    seen = [x for r in runs for x in (r.get("cpu_ratio_before"), r.get("cpu_ratio_after")) if isnum(x)]
    if not seen or max(seen) < 1.2:
        return None
    return (f"the two CPUs' speed varied: the slower one computed {min(seen):.2f}..{max(seen):.2f}x "
            f"(median {median(seen):.2f}x) as slow as the faster one alone, probed before and after each "
            "run: the host shares their cores with other work, and small-message times move with it")


# A run during which other processes used more than this % of the CPUs is repeated.
DISTURBED_PCT = 10.0

# On a VM the cache-line latency between the two vCPUs (c2c_probe) jumps between states
# (here ~25 ns and ~165 ns) as the host moves them, and every shared-memory latency moves
# with it (8 B ping-pong: ~0.13 vs ~0.35 us). Runs whose probes are within this factor are
# taken to be in the same state; the benchmarks compare libraries within one state.
STATE_FACTOR = 1.5


def same_state(a, b) -> bool:
    """Whether two c2c probes (ns) show the same vCPU state; True when either is missing."""
    if not (isnum(a) and isnum(b)) or a <= 0 or b <= 0:
        return True
    return max(a, b) / min(a, b) <= STATE_FACTOR


def select_clean(runs, group=lambda r: ()):
    """Which runs a summary uses, for runs of several libraries in interleaved rounds (each a
    dict with "lib", "round", "c2c_ns", "rows", "disturbed", "unstable"). A run is clean when it
    was undisturbed, its state did not change during it, and the core-to-core probe put it in
    the fastest state seen (within STATE_FACTOR of the lowest probe). Per group of runs that
    compare with each other (`group(run)`, say the rank count), the rounds in which every
    library's run was clean, for every library: each library's clean runs alone would set one
    library's fast rounds against another's slow ones, since the probe's cut falls between the
    runs of one round (seen: goal's runs at 73-81 ns counted in all five rounds and Open MPI's at
    88-106 ns in only two, its fastest). A group without such a round takes each library's clean
    runs, then its undisturbed runs, then all.

    Returns (keep, shared, own, fallback): the (lib, *group, round) kept; per group with common
    rounds, (group, those rounds, all rounds); the groups without; "lib (level)" for libraries
    that had to fall back below clean runs."""
    c2cs = [r["c2c_ns"] for r in runs if isnum(r.get("c2c_ns"))]
    fast = min(c2cs) if c2cs else None

    def clean(r):
        return same_state(fast, r.get("c2c_ns")) and not r.get("disturbed") and not r.get("unstable")

    keep, shared, own, fallback = set(), [], [], []
    for g in sorted({group(r) for r in runs}):
        mine = [r for r in runs if group(r) == g and r.get("rows")]
        libs = {r["lib"] for r in mine}
        rounds = sorted({r["round"] for r in mine})
        common = [k for k in rounds if {r["lib"] for r in mine if r["round"] == k and clean(r)} == libs]
        if common:
            keep |= {(r["lib"], *g, r["round"]) for r in mine if r["round"] in common}
            shared.append((g, common, rounds))
            continue
        own.append(g)
        for lib in sorted(libs):
            theirs = [r for r in mine if r["lib"] == lib]
            chosen, level = [], "none"
            for level, test in (("clean", clean), ("undisturbed", lambda r: not r.get("disturbed")),
                                ("any", lambda r: True)):
                chosen = [r for r in theirs if test(r)]
                if chosen:
                    break
            if level != "clean":
                fallback.append(f"{lib}{''.join(f'/{x}' for x in g)} ({level})")
            keep |= {(r["lib"], *g, r["round"]) for r in chosen}
    return keep, shared, own, fallback


def clean_note(runs, keep, shared, own, fallback, label=lambda g: "") -> str:
    """The summary's note on the runs `select_clean` chose; `label(group)` names a group of
    runs ("2 ranks"), or "" where there is one group."""
    c2cs = [r["c2c_ns"] for r in runs if isnum(r.get("c2c_ns"))]
    fast = min(c2cs) if c2cs else None
    named = lambda g: f"{label(g)}: " if label(g) else ""  # noqa: E731
    note = (f"summary over the {len(keep)} of {len(runs)} runs that were clean (fast core-to-core state"
            + (f" ~{fast:.0f} ns" if fast else "") + ", no other process busy)")
    if shared:
        rounds = "; ".join(f"{named(g)}round(s) {', '.join(str(k + 1) for k in common)} of {len(every)}"
                           for g, common, every in shared)
        note += f", the same rounds for every library ({rounds})"
    note += "; --all-states for all"
    if own:
        groups = ", ".join(label(g) for g in own if label(g))
        note += f"; no round clean for every library{' with ' + groups if groups else ''}: each library's own clean runs"
    if fallback:
        note += f"; no clean run of: {', '.join(fallback)}: their numbers are suspect"
    return note


def c2c_mean(before, after):
    """The c2c latency of a run from its probes before and after (either may be missing)."""
    return round((before + after) / 2, 1) if before and after else (before or after)


def log_again(disturbed: bool, foreign_pct, before, after):
    """Says why a run is repeated: other processes took the CPUs, or the vCPU state changed."""
    if disturbed:
        log(f"    disturbed: {foreign_pct}% of the CPUs used by other processes "
            f"({', '.join(busy_processes(10)) or '?'}); again")
    else:
        log(f"    core-to-core latency changed during the run ({before} -> {after} ns); again")


# ---------------------------------------------------------------------------------------
# plots

def find_cluster_tool(path: Path | None = None, build: bool = True) -> Path | None:
    """goal-cluster (crates/goal-netns), the emulated cluster's tool: PATH if given and
    there, else the workspace's build of it ($CARGO_TARGET_DIR's, then target/'s, release),
    built if missing when `build` and this is a source tree; None when there is none."""
    if path is not None:
        return path if path.exists() else None
    dirs = [Path(os.environ["CARGO_TARGET_DIR"])] if os.environ.get("CARGO_TARGET_DIR") else []
    candidates = [d / "release" / "goal-cluster" for d in dirs + [REPO / "target"]]
    found = next((t for t in candidates if t.exists()), None)
    if found is None and build and (REPO / "Cargo.toml").exists():
        log("building goal-cluster (cargo build --release -p goal-netns) ...")
        run(["cargo", "build", "--release", "-q", "-p", "goal-netns"], timeout=900, check=True, cwd=REPO)
        found = next((t for t in candidates if t.exists()), None)
    return found


def cluster_tool(path: Path | None = None) -> Path:
    """find_cluster_tool(), or the end of the run saying what is missing."""
    tool = find_cluster_tool(path)
    if tool is None:
        die(f"{path or 'goal-cluster'} does not exist (cargo build --release -p goal-netns builds it)")
    return tool


def pyplot():
    """matplotlib.pyplot with the Agg backend, or None (with a warning) if missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        warn("matplotlib is not installed (scripts/install-deps.sh installs it); no plot written")
        return None


# one fixed style per library name, so every plot of the project looks alike
STYLES = {
    "goal": dict(color="#d62728", marker="o"),
    "goal-heap": dict(color="#ff7f0e", marker="D"),
    "openmpi": dict(color="#1f77b4", marker="s"),
    "openmpi-nosc": dict(color="#17becf", marker="v"),
    "mpich": dict(color="#2ca02c", marker="^"),
    "oneccl": dict(color="#0068b5", marker="P"),
    "oneccl-shm": dict(color="#7f3fbf", marker="X"),
}
_EXTRA_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]


def style(lib: str) -> dict:
    if lib in STYLES:
        return dict(STYLES[lib])
    base = next((k for k in sorted(STYLES, key=len, reverse=True) if lib.startswith(k)), None)
    s = dict(STYLES[base]) if base else {"marker": "x"}
    s["color"] = _EXTRA_COLORS[hash(lib) % len(_EXTRA_COLORS)] if not base else s["color"]
    s["linestyle"] = "--" if base else "-"
    return s


def log_bars(ax, labels: Sequence[str], vals: Sequence[float], colors: Sequence[str], title: str,
             fontsize: int = 8) -> None:
    """Horizontal bars of times in us on a log axis, top to bottom, each with its value."""
    import matplotlib.ticker as mt
    ax.barh(range(len(vals)), vals, color=colors)
    ax.set_yticks(range(len(vals)))
    ax.set_yticklabels(labels, fontsize=fontsize)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(mt.NullFormatter())
    for i, v in enumerate(vals):
        ax.text(v, i, f" {fmt_num(v)}", va="center", fontsize=fontsize)
    ax.set_xlabel("time [µs] (log)")
    ax.set_title(title, fontsize=fontsize + 3)
    ax.grid(True, axis="x", alpha=0.3)


def bytes_axis(ax, sizes: Sequence[int], min_step: int = 4) -> None:
    """log2 x axis: a tick at every size, labels (1, 8, 64, 512, 4K, 1M...) only where they
    are at least min_step apart, so they do not overlap."""
    import matplotlib.ticker as mt
    ax.set_xscale("log", base=2)
    ticks = sorted(s for s in sizes if s > 0)
    labelled = []
    for s in ticks:
        if not labelled or s >= labelled[-1] * min_step:
            labelled.append(s)
    ax.xaxis.set_major_locator(mt.FixedLocator(labelled))
    ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _: fmt_bytes_short(int(round(v)))))
    ax.xaxis.set_minor_locator(mt.FixedLocator([s for s in ticks if s not in labelled]))
    ax.xaxis.set_minor_formatter(mt.NullFormatter())
    ax.set_xlabel("message size [bytes]")


def short_version(v: str) -> str:
    """'Open MPI v4.1.4, package: ...' -> 'Open MPI v4.1.4'; 'MPICH Version:\t4.0.2' -> 'MPICH 4.0.2'"""
    v = " ".join(str(v).split())
    v = v.split(",")[0]
    return v.replace("Version: ", "").replace("Version:", "").strip()
