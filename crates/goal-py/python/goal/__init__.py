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

__all__ = [name for name in dir(_goal) if not name.startswith("_")] + ["Error", "world", "Request", "empty", "zeros"]

#: mpi4py's name for a handle.
Request = Handle


def world() -> Group:
    """The group of every rank of the job (``goal.init()`` first)."""
    return _goal.world_group()


def empty(shape, dtype="float64"):
    """A numpy array in this rank's shared heap, its contents undefined.

    Other ranks of this machine read a large message sent from it with one
    copy in user space, where an array from numpy's own allocator costs a
    kernel copy that pins its pages first (docs/python.md, "Arrays in the
    shared heap"). The memory goes back to the heap when the array and
    every view of it are gone; arrays outlive ``goal.finalize()`` with
    their contents. 64-byte aligned. ``goal.init()`` first.
    """
    import numpy as np

    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = 1
    for d in shape:
        if d < 0:
            raise ValueError(f"goal.empty: negative dimension {d} in {shape}")
        count *= d
    buf = _goal.HeapBuffer(count * dt.itemsize)
    return np.frombuffer(buf, dtype=dt, count=count).reshape(shape)


def zeros(shape, dtype="float64"):
    """As ``goal.empty``, filled with zeros."""
    a = empty(shape, dtype)
    a[...] = 0
    return a


def _finalize_at_exit() -> None:
    if _goal.is_initialized():
        try:
            _goal.finalize()
        except Error:
            pass


_atexit.register(_finalize_at_exit)
