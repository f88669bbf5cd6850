"""Zero-copy, the GIL released while goal waits, graphs (workers/misc.py)."""

import pytest

from conftest import launch


@pytest.mark.parametrize("n", [1, 2, 4])
def test_zero_copy_gil_and_graphs(mode, n):
    job = launch(n, "misc.py", mode=mode, timeout=60)
    assert job.returncodes == [0] * len(job.returncodes), job.describe()
    assert len(job.lines("OK rank ")) == n, job.describe()
