"""Starting real goal jobs from pytest: under goalrun, and as torchrun does.

Every test launches N Python processes that import goal and exchange real
bytes, and checks what each rank printed. Two launchers:

- ``goalrun``: ``goalrun -n N python worker.py``.
- ``torchrun``: N processes started here with torchrun's environment
  (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
  ``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``) plus
  ``GOAL_SECRET``; a listener holds ``MASTER_PORT`` as torchrun's agent does,
  so goal must use its own port beside it. No torch needed.

goalrun is taken from ``$GOAL_PREFIX/bin``, else ``PATH``, else the build
tree (``$CARGO_TARGET_DIR`` or ``target``, release).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from netns_cluster import collect

HERE = Path(__file__).resolve().parent
WORKERS = HERE / "workers"
REPO = HERE.parents[2]


def goalrun_path() -> str:
    prefix = os.environ.get("GOAL_PREFIX")
    if prefix and (Path(prefix) / "bin" / "goalrun").exists():
        return str(Path(prefix) / "bin" / "goalrun")
    found = shutil.which("goalrun")
    if found:
        return found
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    cand = target / "release" / "goalrun"
    if cand.exists():
        return str(cand)
    pytest.fail("goalrun not found: set GOAL_PREFIX to an installed goal (make install PREFIX=...)")


#: The MPI launchers: mode -> (scripts/mpi-env.sh variable, Debian's name).
MPIRUN = {"ompi": ("GOAL_OMPI_MPIRUN", "mpirun.openmpi"), "mpich": ("GOAL_MPICH_MPIRUN", "mpirun.mpich")}


def mpirun_path(mode: str) -> str | None:
    """An MPI's launcher, as scripts/install-deps.sh found it, or on PATH."""
    var, name = MPIRUN[mode]
    env_file = REPO / "scripts" / "mpi-env.sh"
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            if line.startswith(var + "="):
                return line.split("=", 1)[1]
    return shutil.which(name)


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process' environment without any launcher's variables."""
    drop = ("GOAL_RANK", "GOAL_SIZE", "GOAL_JOB", "GOAL_BOOTSTRAP", "GOAL_STORE", "GOAL_SECRET",
            "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PMI_RANK",
            "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # Block-buffered output (the default into a pipe): each rank's lines
    # reach the shared pipe in one write at exit or flush, never cut into
    # by another rank's (unbuffered, print() writes text and newline apart).
    env.pop("PYTHONUNBUFFERED", None)
    env.update(extra or {})
    return env


@dataclass
class Job:
    """What a job's ranks printed and how they ended."""

    returncodes: list[int]
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"exit {self.returncodes}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"

    def lines(self, prefix: str) -> list[str]:
        return [l for l in self.stdout.splitlines() if l.startswith(prefix)]


def free_pair() -> tuple[socket.socket, int]:
    """A port held open (torch's store) whose next port is free (goal's)."""
    while True:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        probe = socket.socket()
        try:
            probe.bind(("0.0.0.0", port + 1))
            probe.close()
            return s, port
        except OSError:
            probe.close()
            s.close()


def launch(n: int, worker: str, *args: str, mode: str = "goalrun", timeout: float = 120,
           env: dict[str, str] | None = None, secret: bool = True) -> Job:
    """Runs ``workers/<worker>`` on n ranks under ``mode`` and collects it
    (torchrun: with a fresh GOAL_SECRET unless ``secret`` is false)."""
    script = [sys.executable, str(WORKERS / worker), *args]
    if mode == "goalrun":
        p = subprocess.run([goalrun_path(), "-n", str(n), "--timeout", str(int(timeout)), *script],
                           env=clean_env(env), capture_output=True, text=True, timeout=timeout + 30)
        return Job([p.returncode], p.stdout, p.stderr)
    if mode in MPIRUN:
        launcher = mpirun_path(mode)
        extra = ["--allow-run-as-root", "--oversubscribe"] if mode == "ompi" else []
        p = subprocess.run([launcher, *extra, "-n", str(n), *script], env=clean_env(env),
                           capture_output=True, text=True, timeout=timeout)
        return Job([p.returncode], p.stdout, p.stderr)
    assert mode == "torchrun", mode
    holder, port = free_pair()
    try:
        base = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(n),
                "LOCAL_WORLD_SIZE": str(n), "TORCHELASTIC_RUN_ID": f"pytest-{port}", **(env or {})}
        if secret:
            base["GOAL_SECRET"] = os.urandom(32).hex()
        procs = [subprocess.Popen(script, env=clean_env({**base, "RANK": str(r), "LOCAL_RANK": str(r)}),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in range(n)]
        outs = collect(procs, timeout)
        return Job([p.returncode for p in procs], "".join(o[0] for o in outs), "".join(o[1] for o in outs))
    finally:
        holder.close()


@pytest.fixture(params=["goalrun", "torchrun"])
def mode(request) -> str:
    """Each launcher in turn."""
    return request.param
