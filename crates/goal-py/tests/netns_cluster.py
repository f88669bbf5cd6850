"""Emulated hosts for the tests (crates/goal-netns's goal-cluster: network
namespaces, root only), shared by goal-py's tests and goal_torch's
(python/goal_torch/tests puts this directory on sys.path).

``emulated_cluster(hosts)`` brings a named cluster up (1 rail) and down
again, or skips the test, saying why, when a prerequisite is missing:
root, or goal-cluster (built by ``cargo build --release --workspace``; taken
from ``$CARGO_TARGET_DIR`` or the checkout's ``target``). ``run_on_hosts``
starts one process per rank on its host and collects them, killing all at
a timeout so that a hang fails the test instead of blocking CI
(``collect``, which conftest's torchrun-style launch uses too).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[3]


def cluster_tool() -> Path | None:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    tool = target / "release" / "goal-cluster"
    return tool if tool.exists() else None


@contextlib.contextmanager
def emulated_cluster(hosts: int, tag: str) -> Iterator[tuple[Path, str]]:
    """A cluster of `hosts` hosts with one rail (host h at 10.100.0.h+1 on
    rail0) for the duration of the block: yields (goal-cluster, its name)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tool = cluster_tool()
    if tool is None:
        pytest.skip("goal-cluster is not built (cargo build --release --workspace)")
    name = f"{tag}{os.getpid()}"
    up = subprocess.run([str(tool), "up", "--name", name, "--hosts", str(hosts), "--rails", "1"],
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    try:
        yield tool, name
    finally:
        subprocess.run([str(tool), "down", "--name", name], capture_output=True, timeout=60)


def collect(procs: list[subprocess.Popen], timeout: float) -> list[tuple[str, str]]:
    """Each process' (stdout, stderr), all killed when one is still running
    `timeout` seconds into its wait (its stderr then says so)."""
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=timeout))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            outs.append((out, err + f"\n(killed after {timeout} s)"))
    return outs


def run_on_hosts(tool: Path, name: str, ranks: list[tuple[int, dict[str, str], list[str]]],
                 env: dict[str, str], timeout: float) -> tuple[list[int], list[str], str]:
    """Runs each (host, variables, command) of `ranks` on its host with
    `env` plus its variables; returns the exit codes, each one's stdout, and
    a report of everything for an assertion message."""
    procs = []
    for host, extra, cmd in ranks:
        full = [str(tool), "exec", "--name", name, "--host", str(host), "--",
                "env", *[f"{k}={v}" for k, v in extra.items()], *cmd]
        procs.append(subprocess.Popen(full, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = collect(procs, timeout)
    report = "\n".join(f"rank {r} exit {p.returncode}\n{o}\n{e}" for r, (p, (o, e)) in enumerate(zip(procs, outs)))
    return [p.returncode for p in procs], [o for o, _ in outs], report
