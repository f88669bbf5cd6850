"""The package under the MPI launchers goal's bootstrap knows: Open MPI's
mpirun (PMIx) and MPICH's mpiexec (PMI-1), installed by scripts/install-deps.sh."""

import pytest

from conftest import launch, mpirun_path


@pytest.mark.parametrize("mpi", ["ompi", "mpich"])
def test_every_collective_under_mpirun(mpi):
    if not mpirun_path(mpi):
        pytest.skip(f"{mpi}'s mpirun is not installed (make deps)")
    job = launch(3, "colls.py", mode=mpi, timeout=120)
    assert job.returncodes == [0], job.describe()
    assert sorted(int(l.split()[2]) for l in job.lines("OK rank ")) == [0, 1, 2], job.describe()
