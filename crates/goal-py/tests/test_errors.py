"""The Python API's errors (workers/errors.py): bad ranks, too-small buffers,
wrong dtypes, arrays goal cannot use in place, ranks that disagree on a size."""

import pytest

from conftest import launch


@pytest.mark.parametrize("n", [1, 3])
def test_mistakes_raise_goal_error_with_a_clear_message(mode, n):
    job = launch(n, "errors.py", mode=mode, timeout=60)
    assert job.returncodes == [0] * len(job.returncodes), job.describe()
    oks = job.lines("OK rank ")
    assert len(oks) == n and all(int(l.split()[4]) >= 20 for l in oks), job.describe()
    if n > 1:
        # a disagreement on sizes is reported, not waited on forever
        outcomes = [l.split()[3] for l in job.lines("SIZES rank ")]
        assert len(outcomes) == n and any(o != "ok" for o in outcomes), job.describe()


def test_torchrun_without_goal_secret_says_how_to_set_it(tmp_path):
    script = tmp_path / "init.py"
    script.write_text(
        "import sys, goal\n"
        "try:\n"
        "    goal.init()\n"
        "except goal.Error as e:\n"
        "    sys.stdout.write(f'INIT {e.name} {e.message}\\n')\n")
    job = launch(2, str(script), mode="torchrun", timeout=60, secret=False)
    lines = job.lines("INIT ")
    assert len(lines) == 2, job.describe()
    for line in lines:
        assert "GOAL_SECRET" in line and "MASTER_PORT + 1" in line, line
