"""Arrays in the shared heap (workers/heap.py), and how their bytes went."""

import json

import pytest

from conftest import launch


@pytest.mark.parametrize("n", [2, 3])
def test_heap_arrays(mode, n, tmp_path):
    trace = tmp_path / "timeline.json"
    job = launch(n, "heap.py", mode=mode, timeout=90, env={"GOAL_TRACE_FILE": str(trace)})
    assert job.returncodes == [0] * len(job.returncodes), job.describe()
    assert len(job.lines("OK rank ")) == n, job.describe()
    # Sent from the heap, the collectives' large messages took its single copy.
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    paths = {e.get("args", {}).get("path") for e in events}
    assert "heap single copy" in paths, f"paths in the timeline: {sorted(p for p in paths if p)}"
