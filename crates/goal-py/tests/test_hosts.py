"""Across 2 emulated hosts (crates/goal-netns, network namespaces: root
only): every collective at 4 ranks, 2 per host, bootstrapped from torchrun's
variables, the store on host 0's rail address, data over goal-net's TCP."""

from __future__ import annotations

import os
import sys

from conftest import WORKERS, clean_env
from netns_cluster import emulated_cluster, run_on_hosts


def test_every_collective_across_two_hosts():
    with emulated_cluster(2, "py") as (tool, name):
        secret = os.urandom(32).hex()
        ranks = [(r // 2, {"MASTER_ADDR": "10.100.0.1", "MASTER_PORT": "29600", "RANK": str(r), "WORLD_SIZE": "4",
                           "LOCAL_RANK": str(r % 2), "LOCAL_WORLD_SIZE": "2", "GOAL_SECRET": secret,
                           "GOAL_RAILS": "rail0"},
                  [sys.executable, str(WORKERS / "colls.py")]) for r in range(4)]
        codes, outs, report = run_on_hosts(tool, name, ranks, clean_env(), timeout=180)
        assert codes == [0] * 4, report
        assert all(f"OK rank {r} checks" in o for r, o in enumerate(outs)), report
