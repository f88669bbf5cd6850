"""goal_torch: goal as a torch.distributed backend.

Importing this package registers the backend ``"goal"`` with
``torch.distributed.Backend.register_backend`` (as the oneCCL and UCC
bindings do), so that::

    import goal_torch
    torch.distributed.init_process_group("goal")   # torchrun, env:// or tcp://

runs every CPU collective of the job on goal. goal starts from the c10d
Store torch hands the default group (GOAL_InitWith over a store allgather),
so no goal launcher is needed. A process uses either this package or the
``goal`` package (goal-py), not both: each holds its own goal runtime.
See docs/python.md, section "torch.distributed".
"""
from __future__ import annotations

import atexit
import sys

import torch
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND", "empty", "finalize"]

BACKEND = "goal"


def _check_one_runtime() -> None:
    """Refuses to start a second goal runtime: goal-py's, once initialized,
    is a separate copy of goal in this process."""
    py = sys.modules.get("goal")
    core = getattr(py, "_goal", None)
    if core is not None and getattr(core, "is_initialized", lambda: False)():
        raise RuntimeError(
            "goal torch backend: the goal package (goal-py) already runs goal in this process; "
            "a process uses either goal_torch or goal, not both (each carries its own goal runtime)"
        )


def _create(opts, _backend_options=None):
    """Creator function torch calls for each process group (extended API)."""
    if not _C.initialized():
        _check_one_runtime()
    ranks = list(opts.global_ranks_in_group or [])
    return _C.create_backend(opts.store, opts.group_rank, opts.group_size, ranks, str(opts.group_id))


def empty(*size, dtype=torch.float32):
    """A CPU tensor in goal's shared heap, its contents undefined.

    Another rank of this machine reads a large message sent from it with
    one copy in user space, where a tensor from torch's allocator costs a
    kernel copy that pins its pages first: a flat gradient buffer that is
    all-reduced every step, say. After ``init_process_group("goal")``. The
    memory goes back to goal when the tensor and every view of it are
    gone, also after ``goal_torch.finalize()``, and keeps its contents
    until then. 64-byte aligned.
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    if not _C.initialized():
        raise RuntimeError('goal_torch.empty: goal is not running (init_process_group("goal") first)')
    count = 1
    for d in size:
        if d < 0:
            raise ValueError(f"goal_torch.empty: negative dimension {d} in {tuple(size)}")
        count *= d
    itemsize = torch.empty((), dtype=dtype).element_size()
    return _C.alloc_bytes(count * itemsize).view(dtype).view(size)


def finalize() -> None:
    """Finalizes goal in this process (also run at exit). Destroy the
    process groups first; no goal group may be used afterwards."""
    _C.finalize()


if BACKEND not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu"])
atexit.register(finalize)
