"""Builds goal_torch, goal's torch.distributed backend: a C++ extension
(torch.utils.cpp_extension) against the installed torch, linked to the
libgoal.so of GOAL_PREFIX (default: ../../build/prefix), with that
directory in its rpath. See docs/python.md (torch.distributed)."""
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = os.path.abspath(os.environ.get("GOAL_PREFIX", os.path.join(HERE, "..", "..", "build", "prefix")))
if not os.path.exists(os.path.join(PREFIX, "include", "goal.h")):
    raise SystemExit(f"goal_torch: no goal.h under {PREFIX}: run `make install PREFIX=...` and set GOAL_PREFIX")
LIB = os.path.join(PREFIX, "lib")
SRC = [os.path.join("goal_torch", "csrc", f) for f in ("module.cpp", "backend.cpp", "runtime.cpp")]

setup(
    name="goal_torch",
    version="0.1.0",
    description="torch.distributed backend on goal",
    packages=["goal_torch"],
    ext_modules=[
        CppExtension(
            "goal_torch._C",
            SRC,
            include_dirs=[os.path.join(PREFIX, "include")],
            library_dirs=[LIB],
            libraries=["goal"],
            extra_compile_args=["-O2", "-Wall"],
            extra_link_args=[f"-Wl,-rpath,{LIB}"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
