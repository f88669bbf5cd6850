"""The package under Slurm's srun: a real Slurm (munged, slurmctld and a
slurmd per host, `goal-cluster srun`, see docs/cluster.md) on 2 emulated
hosts, and `srun -N 2 -n 4 --mpi=pmix python colls.py`, 2 ranks per host:
goal boots through Slurm's PMIx server and carries data over the rail
between hosts. Every collective is checked (workers/colls.py).

Skipped, saying why, without root (namespaces, Slurm's daemons), goal-cluster
or Debian's slurmd, slurmctld, slurm-client and munge (scripts/install-deps.sh
installs them), as crates/goal-cli/tests/slurm.rs is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import WORKERS, clean_env
from netns_cluster import emulated_cluster

SLURM_TOOLS = ["munged", "slurmctld", "slurmd", "srun", "sinfo"]
SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"


def test_every_collective_under_srun():
    missing = [t for t in SLURM_TOOLS if shutil.which(t, path=SBIN) is None and shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (apt-get install slurmd slurmctld slurm-client munge)")
    with emulated_cluster(2, "pys") as (tool, name):
        cmd = [str(tool), "srun", "--name", name, "--", "-N", "2", "-n", "4", "--ntasks-per-node=2",
               "--mpi=pmix", "--kill-on-bad-exit=1", sys.executable, str(WORKERS / "colls.py")]
        try:
            p = subprocess.run(cmd, env=clean_env({"GOAL_RAILS": "rail0"}), capture_output=True, text=True,
                               timeout=240)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"srun did not end in 240 s:\n{e.stdout}\n{e.stderr}")
        report = f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
        assert p.returncode == 0, report
        ranks = sorted(int(l.split()[2]) for l in p.stdout.splitlines() if l.startswith("OK rank "))
        assert ranks == [0, 1, 2, 3], report
