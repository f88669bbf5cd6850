"""Every example of docs/python.md that starts with ``# goalrun -n N`` runs,
on N ranks, under goalrun and under torchrun's environment."""

from __future__ import annotations

import re

import pytest

from conftest import REPO, launch

DOC = REPO / "docs" / "python.md"


def examples() -> list[tuple[int, int, str]]:
    """(line, ranks, code) of each runnable block."""
    text = DOC.read_text()
    out = []
    for m in re.finditer(r"```python\n(# goalrun -n (\d+)\n.*?)```", text, re.S):
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, int(m.group(2)), m.group(1)))
    return out


def test_the_page_has_examples():
    assert len(examples()) >= 5


@pytest.mark.parametrize("line,ranks,code", examples(), ids=lambda v: str(v) if isinstance(v, int) else None)
def test_example_runs(mode, tmp_path, line, ranks, code):
    script = tmp_path / f"python_md_{line}.py"
    script.write_text(code + "\nimport sys\nsys.stdout.write('EXAMPLE DONE\\n')\n")
    job = launch(ranks, str(script), mode=mode, timeout=60)
    assert job.returncodes == [0] * len(job.returncodes), f"docs/python.md:{line}\n{job.describe()}"
    assert job.stdout.count("EXAMPLE DONE") == ranks, f"docs/python.md:{line}\n{job.describe()}"
