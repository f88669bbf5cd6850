"""Intel oneCCL as a peer of the collective and overlap benchmarks (coll.py's and overlap.py's "oneccl").

oneCCL is the ML world's collective library (PyTorch's "ccl" backend, DeepSpeed on CPUs): its
worker threads progress collectives asynchronously, its answer to the progress problem, and
they spin (one per rank by default, CCL_WORKER_COUNT), so its CPU cost is part of what it
measures. scripts/install-oneccl.sh installs it from PyPI (oneccl-cpu, oneccl-cpu-devel and
the loader libccl.so.2 from oneccl) into build/oneccl, or GOAL_ONECCL=DIR names another.
`make install PREFIX=DIR` ships the script as DIR/share/goal/scripts/install-oneccl.sh, which
installs into DIR/share/goal/build/oneccl, where the installed `goal bench` looks.

The program is bench/mpi_coll.c built with -DGOAL_BENCH_ONECCL against MPICH and linked with
bench/ccl_shim.cpp: the same method, iterations, verification and output as the MPIs', every
timed collective a oneCCL call plus the wait on its event (variant "blocking"), MPICH starting
the job and carrying only the harness' own traffic (ccl_shim.h). oneCCL has no gather or
scatter; its transport is OFI (Debian's libfabric), its MPI transport wanting Intel MPI.
overlap.py builds bench/overlap.c the same way (start = the ccl:: call, test = the event's
test(), wait = its wait()). Where oneCCL is not installed the benchmarks run without it, saying so.
"""
from __future__ import annotations

import os
from pathlib import Path

import common as C

NAME = "oneccl"
# The settings measured, each a library column of its own (as openmpi-nosc is Open MPI's):
# what a user gets out of the box, and what oneCCL's documentation offers a job whose ranks
# share one machine and have no core to spare for a worker. Out of the box its transport is
# libfabric's tcp provider, even between ranks of one machine, and each rank's worker thread
# spins on a CPU that a rank computes on: 2 ranks on 2 CPUs took 4-8 ms per collective, one
# scheduler time slice, where the shared-memory provider and collectives run by the calling
# thread took 5.2 us for a barrier and 196 us for a 1 MiB allreduce (2026-12-01). With more
# ranks than CPUs both take milliseconds: its waits spin without yielding.
SETTINGS = (
    (NAME, {}, "oneCCL over OFI (tcp provider), started by MPICH; a worker thread per rank spins"),
    (NAME + "-shm", {"CCL_ATL_SHM": "1", "CCL_WORKER_OFFLOAD": "0"},
     "oneCCL with CCL_ATL_SHM=1 (libfabric's shared-memory provider between local ranks) and "
     "CCL_WORKER_OFFLOAD=0 (collectives progressed by the calling thread, no worker spinning)"),
)
NAMES = tuple(name for name, _, _ in SETTINGS)


def find() -> Path | None:
    """oneCCL's install prefix (lib/libccl.so.1, include/oneapi/ccl.hpp), or None. Absolute:
    the benchmark binary takes it as its run path, and the drivers run it from the checkout
    (`goal bench` from its installed copy), not from the caller's directory."""
    for d in (os.environ.get("GOAL_ONECCL"), str(C.REPO / "build" / "oneccl")):
        if d and (Path(d) / "lib" / "libccl.so.1").exists() and (Path(d) / "include" / "oneapi" / "ccl.hpp").exists():
            return Path(d).resolve()
    return None


def missing() -> str:
    """The warning of a driver that goes on without oneCCL: where it looked, and what installs it."""
    where = C.REPO / "build" / "oneccl"
    given = os.environ.get("GOAL_ONECCL")
    if given:
        where = f"GOAL_ONECCL={given} or {where}"
    return (f"oneCCL not found in {where} ({C.REPO / 'scripts' / 'install-oneccl.sh'} installs it there; "
            "GOAL_ONECCL=DIR names another install); continuing without it")


def build(mpi: C.MPI, prefix: Path, deps, src: Path | None = None, out: Path | None = None,
          libs=()) -> Path:
    """`src` (default mpi_coll.c) built with -DGOAL_BENCH_ONECCL and linked with ccl_shim.cpp by
    MPICH's wrappers into `out` (default BUILD/mpi_coll.oneccl); BenchError if that fails."""
    src = src or C.BENCH / "mpi_coll.c"
    out = out or C.BUILD / "mpi_coll.oneccl"
    srcs = [src, C.BENCH / "ccl_shim.cpp", C.BENCH / "ccl_shim.h", *deps]
    # The binary's run path names the prefix: built against another one (or a relative one,
    # before find() resolved it) it would not load, however new it is.
    stamp = out.with_name(out.name + ".prefix")
    if C._newer(out, srcs + [prefix / "lib" / "libccl.so.1"]) and stamp.exists() and stamp.read_text() == str(prefix):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    mpicxx = mpi.mpicc.replace("mpicc", "mpicxx")
    c_obj, cc_obj = out.with_name(out.name + ".o"), out.with_name(out.name + ".shim.o")
    C.run([mpi.mpicc, *C.CFLAGS, "-I", C.BENCH, "-DGOAL_BENCH_ONECCL", "-c", src, "-o", c_obj], timeout=300, check=True)
    C.run([mpicxx, "-O2", "-g", "-Wall", f"-I{prefix / 'include'}", "-c", C.BENCH / "ccl_shim.cpp", "-o", cc_obj],
          timeout=300, check=True)
    C.run([mpicxx, "-o", out, c_obj, cc_obj, f"-L{prefix / 'lib'}", "-lccl", *libs, f"-Wl,-rpath,{prefix / 'lib'}"],
          timeout=300, check=True)
    stamp.write_text(str(prefix))
    return out


def configs(a, mpis: dict, deps, program_args, Config) -> tuple[list, dict]:
    """The oneCCL configurations of coll.py (one per setting and rank count, see SETTINGS) and
    its library facts; none, with a warning, where oneCCL or MPICH is missing or the build
    fails."""
    prefix = find()
    if prefix is None:
        C.warn(missing())
        return [], {}
    mpi = mpis.get("mpich")
    if mpi is None:
        C.warn("oneCCL is run under MPICH, which is missing; continuing without oneCCL")
        return [], {}
    try:
        exe = build(mpi, prefix, deps)
    except C.BenchError as e:
        C.warn(f"oneCCL: build failed, skipping it:\n{e}")
        return [], {}
    out = []
    for n in a.ranks:
        for name, settings, note in SETTINGS:
            cmd, env = mpi.launch(n, [exe, name, "--variants", "blocking", *program_args(a, n)], bind="none")
            out.append(Config(name, "mpi", n, cmd, {**env, **settings}, note))
    return out, {"prefix": str(prefix), "mpicc": mpi.mpicc, "mpirun": mpi.mpirun}
