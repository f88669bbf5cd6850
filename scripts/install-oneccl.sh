#!/usr/bin/env bash
# Install Intel oneCCL for the collective benchmark's "oneccl" peer (bench/ccl.py), from PyPI:
#   - oneccl-cpu        libccl.so.1, the CPU build of oneCCL
#   - oneccl-cpu-devel  its headers (include/oneapi/ccl.hpp)
#   - oneccl            only for libccl.so.2, the small loader that oneccl-cpu's libccl.so.1
#                       needs but does not ship (oneccl's own libccl.so.1 is the SYCL build,
#                       which needs Intel's SYCL and compiler runtimes: not used)
#   - libfabric1 (Debian): oneCCL's OFI transport, its default; its MPI transport wants
#     Intel MPI and falls back to OFI under MPICH
# into DIR (default: build/oneccl of this tree, where bench/ccl.py looks; GOAL_ONECCL=DIR
# makes the benchmark look elsewhere). Wheels are unpacked, not pip-installed: nothing
# touches the Python environment. The three wheels are ~130 MB to download.
#
# Usage: scripts/install-oneccl.sh [--prefix DIR] [--check] [--verify]
#   --check   install nothing; exit 1 if oneCCL is not in DIR
#   --verify  then build a 2-rank oneCCL allreduce under MPICH and run it
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
VERSION=2022.2.0
DIR="$REPO/build/oneccl"
CHECK=0
VERIFY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) DIR="$2"; shift ;;
        --prefix=*) DIR="${1#--prefix=}" ;;
        --check) CHECK=1 ;;
        --verify) VERIFY=1 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "install-oneccl.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
PY="${PYTHON:-python3}"

installed() { [ -e "$DIR/lib/libccl.so.1" ] && [ -e "$DIR/lib/libccl.so.2" ] && [ -e "$DIR/include/oneapi/ccl.hpp" ]; }

if [ "$CHECK" -eq 1 ]; then
    installed || { echo "install-oneccl.sh: oneCCL is not installed in $DIR" >&2; exit 1; }
    exit 0
fi

if ! installed; then
    if ! dpkg-query -W -f='${db:Status-Status}' libfabric1 2>/dev/null | grep -qx installed; then
        SUDO=()
        [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=(sudo -n)
        "${SUDO[@]}" apt-get install -y -q libfabric1 >/dev/null || {
            "${SUDO[@]}" apt-get update -q >/dev/null && "${SUDO[@]}" apt-get install -y -q libfabric1 >/dev/null; }
    fi
    TMP="$(mktemp -d -t oneccl.XXXXXX)"
    trap 'rm -rf "$TMP"' EXIT
    "$PY" -m pip download --quiet --no-deps -d "$TMP/wheels" \
        "oneccl-cpu==$VERSION" "oneccl-cpu-devel==$VERSION" "oneccl==$VERSION"
    for w in "$TMP"/wheels/*.whl; do
        "$PY" -m zipfile -e "$w" "$TMP/x/$(basename "$w" .whl)"
    done
    data() { echo "$TMP"/x/"$1"-"$VERSION"-*/"$1"-"$VERSION".data/data; }
    mkdir -p "$DIR/lib" "$DIR/include"
    cp -a $(data oneccl_cpu)/lib/libccl.so* "$DIR/lib/"
    cp -a $(data oneccl)/lib/libccl.so.2* "$DIR/lib/"
    cp -a $(data oneccl_cpu_devel)/include/. "$DIR/include/"
    chmod 755 "$DIR"/lib/*.so*
    installed || { echo "install-oneccl.sh: the wheels did not have what was expected" >&2; exit 1; }
fi

if [ "$VERIFY" -eq 1 ]; then
    T="$(mktemp -d -t oneccl-verify.XXXXXX)"
    cat > "$T/allreduce.cpp" <<'CPP'
#include <mpi.h>
#include <cstdio>
#include <vector>
#include "oneapi/ccl.hpp"
int main(int argc, char **argv) {
    ccl::init();
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ccl::shared_ptr_class<ccl::kvs> kvs;
    ccl::kvs::address_type addr;
    if (rank == 0) kvs = ccl::create_main_kvs(), addr = kvs->get_address();
    MPI_Bcast(addr.data(), addr.size(), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank != 0) kvs = ccl::create_kvs(addr);
    auto comm = ccl::create_communicator(size, rank, kvs);
    std::vector<float> s(1024, rank + 1.0f), r(1024, 0.0f);
    ccl::allreduce(s.data(), r.data(), s.size(), ccl::reduction::sum, comm).wait();
    int bad = 0;
    for (float x : r) bad += x != size * (size + 1) / 2.0f;
    printf("rank %d: oneCCL allreduce %s\n", rank, bad ? "WRONG" : "ok");
    MPI_Finalize();
    return bad != 0;
}
CPP
    mpicxx.mpich -O2 -I"$DIR/include" "$T/allreduce.cpp" -L"$DIR/lib" -lccl -Wl,-rpath,"$DIR/lib" -o "$T/allreduce" 2>&1 \
        | grep -v "may conflict with libccl.so.1" || true
    timeout 120 mpirun.mpich -n 2 "$T/allreduce" 2>&1 | grep -v CCL_WARN
    rm -rf "$T"
fi
echo "install-oneccl.sh: oneCCL $VERSION in $DIR"
