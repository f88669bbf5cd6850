"""A rank killed (SIGKILL) mid-collective: every other rank's call raises
goal.Error within seconds instead of hanging. The last rank kills itself at
iteration 30 of an allreduce loop (started with iallreduce and waited for,
so the wait that fails is the GIL-releasing one). Survivors print
``RAISED rank R after S code NAME: message`` and end, as a program that does
not catch the error would: a survivor that was waiting only for another
survivor (not for the victim) learns of the failure when that one ends.""" 

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import goal


def main() -> None:
    goal.init()
    w = goal.world()
    victim = w.size - 1
    x = np.ones(1 << 15, np.float32)
    y = np.empty_like(x)
    for i in range(100_000):
        if w.rank == victim and i == 30:
            os.kill(os.getpid(), signal.SIGKILL)
        t = time.monotonic()
        try:
            goal.iallreduce(x, y).wait()
        except goal.Error as e:
            sys.stdout.write(f"RAISED rank {w.rank} after {time.monotonic() - t:.2f} code {e.name}: {e.message}\n")
            sys.stdout.flush()
            os._exit(0)
    sys.stdout.write(f"NEVER rank {w.rank}\n")


if __name__ == "__main__":
    main()
