"""The package's surface, in one process (no launcher): the type hints name
exactly what the native module has, every function has a docstring, and a
process started alone is a group of one."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import goal

STUB = Path(goal.__file__).with_name("_goal.pyi")


def stub_names() -> set[str]:
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_type_hints_match_the_native_module():
    native = {n for n in dir(goal._goal) if not n.startswith("__")}
    hinted = stub_names() - {"ArrayLike", "Operand"}
    assert native - hinted == set(), "in the module, not in _goal.pyi"
    assert hinted - native == set(), "in _goal.pyi, not in the module"


def test_every_function_and_class_has_a_docstring():
    for name in dir(goal._goal):
        obj = getattr(goal._goal, name)
        if callable(obj) and not name.startswith("_"):
            assert (obj.__doc__ or "").strip(), name
    assert goal.Error.__doc__ and goal.__doc__


def test_alone_is_a_group_of_one():
    code = ("import numpy as np, goal; goal.init(); w = goal.world(); "
            "x = np.arange(3.0); goal.allreduce(x); assert (w.rank, w.size) == (0, 1); "
            "assert x.tolist() == [0, 1, 2]; print('alone ok')")
    from conftest import clean_env
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert p.returncode == 0 and "alone ok" in p.stdout, p.stderr
