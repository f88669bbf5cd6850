"""A rank killed mid-collective: the others raise within seconds, no hang."""

import pytest

from conftest import launch


@pytest.mark.parametrize("n", [2, 3])
def test_killed_rank_makes_the_others_raise(mode, n):
    job = launch(n, "kill.py", mode=mode, timeout=60)
    raised = job.lines("RAISED rank ")
    assert len(raised) == n - 1, job.describe()
    for line in raised:
        after = float(line.split()[4])
        assert after < 5, line
        assert "code ERR_PEER_LOST" in line, line
    # the victim is named, with how it ended, by those that needed it
    assert any(f"rank {n - 1} killed by signal 9" in l for l in raised), job.describe()
    assert not job.lines("NEVER"), job.describe()
