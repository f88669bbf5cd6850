"""pytest for goal_torch, goal's torch.distributed backend.

Each test starts real processes, one per rank, that initialise the "goal"
process group the way torchrun's children do (MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE in the environment, init_method env://), or through
torchrun itself, or with init_method tcp://; the workers check every result
against the same computation done by hand and exit non-zero on a mismatch.
One process runs many checks (importing torch takes seconds).

Skipped, saying so, only when torch is not installed (scripts/install-torch.sh
installs it; `make torch-test` builds goal_torch and runs this).
"""
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: run scripts/install-torch.sh")

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 300  # seconds for a whole job: a hang fails the test, never blocks CI


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def finish(procs, what, codes=None):
    """Waits for every rank (killing all at the timeout) and fails with their
    output if one failed: exited otherwise than `codes[rank]` (default 0)."""
    outs, failed = [], False
    for p in procs:
        try:
            out, _ = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            out += f"\n(killed after {TIMEOUT} s)"
            failed = True
        outs.append(out)
        failed |= p.returncode != (codes or {}).get(len(outs) - 1, 0)
    text = "\n".join(f"--- rank {r} (exit {p.returncode}):\n{o[-4000:]}" for r, (p, o) in enumerate(zip(procs, outs)))
    assert not failed, f"{what} failed:\n{text}"
    return outs


def launch(script, n, extra_env=None, codes=None):
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r), WORLD_SIZE=str(n),
                   LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n), **(extra_env or {}))
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, script)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    return finish(procs, f"{script} at {n} ranks", codes)


def test_goal_torch_imports_and_registers():
    import torch.distributed as dist

    import goal_torch

    assert goal_torch.BACKEND in dist.Backend.backend_list


@pytest.mark.parametrize("n", [2, 4])
def test_every_op_env(n):
    """Every op x dtype x sync/async on the world, a subgroup and a group of one."""
    outs = launch("worker_ops.py", n)
    assert all(" ok " in o for o in outs)


def test_every_op_tcp_init():
    """init_method="tcp://..." (the store torch builds from it) at 3 ranks."""
    port = free_port()
    outs = launch("worker_ops.py", 3, {"GOAL_TORCH_TEST_INIT": f"tcp://127.0.0.1:{port}"})
    assert all(" ok " in o for o in outs)


def test_ddp_goal_vs_gloo_torchrun():
    """DDP under torchrun itself, 2 ranks: the losses of goal and Gloo agree bit for bit."""
    port = free_port()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", os.path.join(HERE, "worker_ddp.py")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = finish([p], "torchrun worker_ddp.py")[0]
    assert out.count("ddp ok") == 2, out


def test_ddp_goal_vs_gloo_3_ranks():
    """DDP at 3 ranks: losses within a relative 1e-5 (different sum orders)."""
    outs = launch("worker_ddp.py", 3)
    assert all("ddp ok" in o for o in outs)


def test_rank_killed_mid_job():
    """The last of 3 ranks dies: the others' all_reduce raises within seconds."""
    outs = launch("worker_kill.py", 3, codes={2: 3})
    assert sum("kill ok" in o for o in outs) == 2


def test_refuses_a_second_runtime():
    """goal-py initialized in the process: init_process_group("goal") raises
    saying that a process uses one or the other."""
    pytest.importorskip("goal", reason="goal-py (make python) is not installed")
    code = (
        "import goal, goal_torch, torch.distributed as dist\n"
        "goal.init()\n"
        "try:\n"
        "    dist.init_process_group('goal')\n"
        "except RuntimeError as e:\n"
        "    print('raised:', e)\n"
    )
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1")
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    out = finish([p], "goal-py and goal_torch in one process")[0]
    assert "raised:" in out and "not both" in out, out
