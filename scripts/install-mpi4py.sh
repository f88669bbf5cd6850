#!/usr/bin/env bash
# Install mpi4py for $PYTHON (default python3), built against Debian's Open MPI
# (mpicc.openmpi, which scripts/install-deps.sh installs), for `goal bench
# torch`'s comparison of goal's Python package with mpi4py's Allreduce.
#
# pip builds it from source with MPICC=mpicc.openmpi (--no-binary, no cache):
# a wheel from PyPI, or one pip built earlier against another MPI, could load
# MPICH's library instead. Debian's python3-mpi4py is not used: it installs for
# /usr/bin/python3 only, not for a python3 of pyenv or a virtualenv. Idempotent
# and quiet: does nothing when mpi4py already imports and runs on Open MPI.
# Compiling mpi4py's one large C file takes about 4 minutes of one CPU.
#
# Usage: scripts/install-mpi4py.sh [--check]
#   --check   install nothing; exit 1 if mpi4py is missing or not on Open MPI
set -euo pipefail
PY="${PYTHON:-python3}"
CHECK=0
for a in "$@"; do
    case "$a" in
        --check) CHECK=1 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "install-mpi4py.sh: unknown argument $a" >&2; exit 2 ;;
    esac
done
. "$(dirname "$0")/quiet.sh"

# The MPI library mpi4py loads, asked without starting MPI (MPI_Get_library_version
# may be called before MPI_Init).
which_mpi() {
    (cd / && "$PY" -c 'import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; print(" ".join(MPI.Get_library_version().replace("\0", "").split()))') 2>/dev/null
}

have="$(which_mpi || true)"
case "$have" in
    *"Open MPI"*) echo "install-mpi4py.sh: mpi4py on ${have%%,*} present"; exit 0 ;;
esac
if [ "$CHECK" -eq 1 ]; then
    echo "install-mpi4py.sh: mpi4py ${have:+on $have, not Open MPI, }missing for $PY" >&2
    exit 1
fi
MPICC="$(command -v mpicc.openmpi || true)"
if [ -z "$MPICC" ]; then
    echo "install-mpi4py.sh: mpicc.openmpi not found: run scripts/install-deps.sh first" >&2
    exit 1
fi
quiet env MPICC="$MPICC" "$PY" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
    --force-reinstall --no-binary mpi4py mpi4py
have="$(which_mpi || true)"
case "$have" in
    *"Open MPI"*) echo "install-mpi4py.sh: mpi4py on ${have%%,*} installed" ;;
    *) echo "install-mpi4py.sh: mpi4py installed but loads '${have:-nothing}', not Open MPI" >&2; exit 1 ;;
esac
