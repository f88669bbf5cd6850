"""`goal bench torch --quick` (bench/torch.py) runs end to end and writes what the full
measurement would: every collective at every size of the quick run with both backends, in
every setup it ran (the emulated hosts too when root can build them), the overlap and DDP
rows of both backends, the Python allreduce rows of what is installed, and the report.

Runs the goal built in this source tree ($CARGO_TARGET_DIR or target/, which runs bench/ of
this tree) or else GOAL_PREFIX's (`make torch-test` sets it; default build/prefix), with
--prefix GOAL_PREFIX. Skipped only when torch is not installed.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed: run scripts/install-torch.sh")

REPO = Path(__file__).resolve().parents[3]
PREFIX = Path(os.environ.get("GOAL_PREFIX", REPO / "build" / "prefix"))
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
OPS = ["all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
       "gather", "scatter", "reduce", "barrier", "send_recv"]
QUICK_SIZES = [8, 65536]


def can_import(module, check=""):
    code = f"import {module}" + (f"; {check}" if check else "")
    return subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True).returncode == 0


def test_bench_torch_quick(tmp_path):
    goal = next((g for g in (TARGET / "release" / "goal", PREFIX / "bin" / "goal") if g.exists()), None)
    assert goal is not None, f"no goal command in {TARGET}/release or {PREFIX}/bin: make install PREFIX=..."
    out = tmp_path / "torch"
    cmd = [str(goal), "bench", "torch", "--quick", "--prefix", str(PREFIX), "--out", str(out),
           "--python", sys.executable]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    doc = json.loads(out.with_suffix(".json").read_text())
    assert doc["benchmark"] == "torch" and doc["args"]["quick"]
    assert all(r["ok"] for r in doc["runs"]), doc["runs"]

    setups = list(doc["setups"])
    assert {"local2", "local4"} <= set(setups), setups
    if os.geteuid() == 0 and (TARGET / "release" / "goal-cluster").exists():
        assert "cluster2" in setups, doc["notes"]
    else:
        assert "cluster2" in setups or any("cluster2 skipped" in n for n in doc["notes"]), doc["notes"]

    s = doc["summary"]
    cols = s["colls"]["key"] + s["colls"]["columns"]
    got = {(r[0], r[2], r[3]): dict(zip(cols, r)) for r in s["colls"]["rows"]}
    want = {(st, op, b) for st in setups for op in OPS for b in ([0] if op == "barrier" else QUICK_SIZES)}
    assert set(got) == want, sorted(set(got) ^ want)
    for k, r in got.items():  # both backends at every point, and their ratio
        assert r["goal_us"] > 0 and r["gloo_us"] > 0, (k, r)
        assert abs(r["goal_over_gloo"] - r["goal_us"] / r["gloo_us"]) < 1e-9 * r["goal_over_gloo"] + 1e-12, r
    assert isinstance(s["goal_faster_everywhere"], bool)
    raw = {(r["setup"], r["op"], r["bytes"], r["backend"]) for r in doc["rows"] if r.get("test") == "coll"}
    assert raw == {(*k, be) for k in want for be in ("goal", "gloo")}

    ov = {(r[0], r[2], r[3]): r for r in s["overlap"]["rows"]}
    assert set(ov) == {(st, 65536, be) for st in setups for be in ("goal", "gloo")}, sorted(ov)
    for r in ov.values():
        assert r[4] > 0 and r[5] > 0 and r[6] > 0 and 0 <= r[7] <= 100, r
    ddp = {r[0]: r for r in s["ddp"]["rows"]}
    assert set(ddp) == set(setups)
    for r in ddp.values():
        assert r[2] > 0 and r[3] > 0 and r[5] is True, r  # both step times; the losses agree

    if can_import("goal"):
        py = {r[0]: r for r in s["python"]["rows"]}
        assert set(py) == set(QUICK_SIZES)
        assert all(r[1] > 0 and r[2] > 0 for r in py.values()), py
        layer = {r[0]: r for r in s["python_layer"]["rows"]}
        assert all(r[4] > 0 for r in layer.values()), layer  # goal's C reference ran
    if can_import("mpi4py", "mpi4py.rc.initialize = False; from mpi4py import MPI; "
                             "assert 'Open MPI' in MPI.Get_library_version()"):
        assert all(r[3] > 0 for r in s["python"]["rows"]), s["python"]
    text = out.with_suffix(".md").read_text()
    assert "## Collectives, local2" in text and "goal/gloo" in text and "## DDP" in text
    assert "Python layer" in text or not can_import("goal")
    if can_import("matplotlib"):
        assert out.with_suffix(".png").stat().st_size > 0
        assert Path(f"{out}_colls.png").stat().st_size > 0
