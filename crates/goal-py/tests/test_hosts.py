"""Across 2 emulated hosts (crates/goal-netns, network namespaces: root
only): every collective at 4 ranks, 2 per host, bootstrapped from torchrun's
variables, the store on host 0's rail address, data over goal-net's TCP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, WORKERS, clean_env


def cluster_tool() -> Path | None:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    tool = target / "release" / "goal-cluster"
    return tool if tool.exists() else None


def test_every_collective_across_two_hosts():
    tool = cluster_tool()
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if tool is None:
        pytest.skip("goal-cluster is not built (cargo build --release --workspace)")
    name = f"py{os.getpid()}"
    up = subprocess.run([str(tool), "up", "--name", name, "--hosts", "2", "--rails", "1"],
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    try:
        secret = os.urandom(32).hex()
        procs = []
        for r in range(4):
            env = {"MASTER_ADDR": "10.100.0.1", "MASTER_PORT": "29600", "RANK": str(r), "WORLD_SIZE": "4",
                   "LOCAL_RANK": str(r % 2), "LOCAL_WORLD_SIZE": "2", "GOAL_SECRET": secret,
                   "GOAL_RAILS": "rail0"}
            cmd = [str(tool), "exec", "--name", name, "--host", str(r // 2), "--",
                   "env", *[f"{k}={v}" for k, v in env.items()], sys.executable, str(WORKERS / "colls.py")]
            procs.append(subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=180))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                outs.append(p.communicate())
        report = "\n".join(f"rank {r} exit {p.returncode}\n{o}\n{e}" for r, (p, (o, e)) in enumerate(zip(procs, outs)))
        assert all(p.returncode == 0 for p in procs), report
        assert all(f"OK rank {r} checks" in o for r, (o, _) in enumerate(outs)), report
    finally:
        subprocess.run([str(tool), "down", "--name", name], capture_output=True, timeout=60)
