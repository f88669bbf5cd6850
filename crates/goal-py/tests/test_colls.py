"""Every collective x dtype x group x form against numpy (workers/colls.py),
at 2 to 4 ranks, under goalrun and under torchrun's environment."""

import pytest

from conftest import launch


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_collective_dtype_group_and_form(mode, n):
    job = launch(n, "colls.py", mode=mode, timeout=120)
    assert job.returncodes == [0] * len(job.returncodes), job.describe()
    oks = job.lines("OK rank ")
    assert sorted(int(l.split()[2]) for l in oks) == list(range(n)), job.describe()
    # each rank checked hundreds of results (a worker that skipped cases would show)
    assert all(int(l.split()[4]) > 1000 for l in oks), job.describe()
