"""goal from Python: GOAL dependency graphs and every collective, on numpy arrays.

    import numpy as np, goal
    goal.init()                       # goalrun, mpirun, srun or torchrun's environment
    w = goal.world()
    x = np.full(4, w.rank, dtype=np.float32)
    goal.allreduce(x, op=goal.SUM)    # in place: x holds the sum on every rank

Arrays are used in place (the buffer protocol: numpy arrays, bytearrays,
memoryviews; torch CPU tensors and ml_dtypes.bfloat16 arrays through a numpy
view of the same memory): nothing is copied on the way in or out. One-shot
collectives (``goal.allreduce``) compile once per shape and reuse the
schedule; ``goal.iallreduce`` returns a ``goal.Handle``; ``goal.allreduce_init``
a persistent ``goal.Schedule`` bound to the arrays. Every failure raises
``goal.Error``. See docs/python.md.
"""

from __future__ import annotations

import atexit as _atexit

from ._errors import Error
from . import _goal
from ._goal import *  # noqa: F401,F403  (the native API; types in _goal.pyi)
from ._goal import Group, Graph, Handle, Schedule  # noqa: F401

__all__ = [name for name in dir(_goal) if not name.startswith("_")] + ["Error", "world", "Request"]

#: mpi4py's name for a handle.
Request = Handle


def world() -> Group:
    """The group of every rank of the job (``goal.init()`` first)."""
    return _goal.world_group()


def _finalize_at_exit() -> None:
    if _goal.is_initialized():
        try:
            _goal.finalize()
        except Error:
            pass


_atexit.register(_finalize_at_exit)
