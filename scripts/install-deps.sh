#!/usr/bin/env bash
# Install what goal's benchmarks and tests need, side by side:
#   - Debian's Open MPI (openmpi-bin, libopenmpi-dev) and MPICH (mpich, libmpich-dev)
#   - pkg-config, iproute2 (ip, tc) and iputils-ping (ping) for the emulated
#     cluster of crates/goal-netns
#   - libpmix2 (crates/goal-boot loads it under PMIx launchers) and libpmix-dev
#     (its layout test compiles against pmix.h)
#   - Slurm (slurmd, slurmctld, slurm-client) and munge: crates/goal-cli's
#     tests/slurm.rs runs jobs with srun across the emulated hosts, on daemons
#     it starts itself (the packages' services are not used)
#   - valgrind: ctests/run.sh runs some C tests under memcheck (`// memcheck:`),
#     and bench/instr.sh counts instructions with callgrind
#   - gdb: ctests/run.sh writes the backtraces of a case that runs long
#     (CTEST_STACKS_AFTER), through valgrind's vgdb for one under memcheck
#   - Python's matplotlib (for the benchmark plots)
# and write scripts/mpi-env.sh, which names each MPI's compiler wrapper and
# launcher explicitly (mpicc.openmpi / mpirun.openmpi, mpicc.mpich / mpirun.mpich),
# so both can be used in one run whatever the update-alternatives default is.
#
# Idempotent, non-interactive, quiet unless something fails, and fast when
# everything is present already (no `apt-get update` then).
#
# Usage: scripts/install-deps.sh [--check] [--verify]
#   --check   install nothing; exit 1 if something is missing
#   --verify  after installing, build and run a 2-rank hello with each MPI
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ENV_OUT="$HERE/mpi-env.sh"
CHECK=0
VERIFY=0
for a in "$@"; do
    case "$a" in
        --check) CHECK=1 ;;
        --verify) VERIFY=1 ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "install-deps.sh: unknown argument $a" >&2; exit 2 ;;
    esac
done

export DEBIAN_FRONTEND=noninteractive
PY="${PYTHON:-python3}"

DEBS=(openmpi-bin libopenmpi-dev mpich libmpich-dev pkg-config iproute2 iputils-ping libpmix2 libpmix-dev valgrind gdb
      slurmd slurmctld slurm-client munge)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); fi
fi

. "$(dirname "$0")/quiet.sh"

missing_debs() {
    local p st
    for p in "${DEBS[@]}"; do
        st="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
        [ "$st" = "installed" ] || echo "$p"
    done
}

have_matplotlib() {
    "$PY" -c 'import matplotlib' >/dev/null 2>&1
}

# ---- Debian packages --------------------------------------------------------
mapfile -t MISSING < <(missing_debs)
if [ "${#MISSING[@]}" -gt 0 ]; then
    if [ "$CHECK" -eq 1 ]; then
        echo "install-deps.sh: missing Debian packages: ${MISSING[*]}" >&2
        exit 1
    fi
    # Some configured third-party repositories may be unreachable; apt-get
    # update only warns about those, and we need just Debian's own mirror.
    quiet "${SUDO[@]}" apt-get update -q
    quiet "${SUDO[@]}" apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        "${MISSING[@]}"
    mapfile -t STILL < <(missing_debs)
    if [ "${#STILL[@]}" -gt 0 ]; then
        echo "install-deps.sh: still missing after install: ${STILL[*]}" >&2
        exit 1
    fi
fi

# ---- matplotlib -------------------------------------------------------------
if ! have_matplotlib; then
    if [ "$CHECK" -eq 1 ]; then
        echo "install-deps.sh: python module matplotlib missing for $PY" >&2
        exit 1
    fi
    quiet "$PY" -m pip install --quiet --disable-pip-version-check matplotlib
    have_matplotlib || { echo "install-deps.sh: matplotlib still not importable by $PY" >&2; exit 1; }
fi

# ---- locate both MPIs by explicit names --------------------------------------
# Debian ships suffixed wrappers/launchers for each implementation; fall back to
# the alternatives' candidates if the suffixed names are ever absent.
find_tool() { # $1 = base name (mpicc|mpirun), $2 = flavour (openmpi|mpich)
    local base="$1" fl="$2" c
    for c in "/usr/bin/$base.$fl" "$(command -v "$base.$fl" 2>/dev/null || true)"; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    if command -v update-alternatives >/dev/null 2>&1; then
        while read -r c; do
            case "$c" in *"$fl"*) [ -x "$c" ] && { echo "$c"; return 0; } ;; esac
        done < <(update-alternatives --list "$base" 2>/dev/null || true)
    fi
    return 1
}

OMPI_CC="$(find_tool mpicc openmpi || true)"
OMPI_RUN="$(find_tool mpirun openmpi || true)"
MPICH_CC="$(find_tool mpicc mpich || true)"
MPICH_RUN="$(find_tool mpirun mpich || true)"
[ -n "$MPICH_RUN" ] || MPICH_RUN="$(find_tool mpiexec mpich || true)"

for v in OMPI_CC OMPI_RUN MPICH_CC MPICH_RUN; do
    if [ -z "${!v}" ]; then
        echo "install-deps.sh: could not find $v" >&2
        exit 1
    fi
done

TMP_ENV="$(mktemp "$ENV_OUT.XXXXXX")"
cat >"$TMP_ENV" <<EOF
# Generated by scripts/install-deps.sh; source it or read it (KEY=VALUE lines).
# As root, Open MPI's mpirun needs --allow-run-as-root (or both
# OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment).
GOAL_OMPI_MPICC=$OMPI_CC
GOAL_OMPI_MPIRUN=$OMPI_RUN
GOAL_MPICH_MPICC=$MPICH_CC
GOAL_MPICH_MPIRUN=$MPICH_RUN
export GOAL_OMPI_MPICC GOAL_OMPI_MPIRUN GOAL_MPICH_MPICC GOAL_MPICH_MPIRUN
EOF
if [ -f "$ENV_OUT" ] && cmp -s "$TMP_ENV" "$ENV_OUT"; then
    rm -f "$TMP_ENV"
else
    mv -f "$TMP_ENV" "$ENV_OUT"
fi

# ---- optional: 2-rank hello with each MPI -------------------------------------
if [ "$VERIFY" -eq 1 ]; then
    D="$(mktemp -d -t mpihello.XXXXXX)"
    cat >"$D/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int r, n, len; char v[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Get_library_version(v, &len);
    int x = r, s = 0;
    MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) { char *nl = v; while (*nl && *nl != '\n' && *nl != ',') nl++; *nl = 0;
                  printf("hello from %d ranks (sum %d): %s\n", n, s, v); }
    MPI_Finalize();
    return s == n * (n - 1) / 2 ? 0 : 1;
}
EOF
    quiet "$OMPI_CC" -O2 -o "$D/hello-ompi" "$D/hello.c"
    quiet "$MPICH_CC" -O2 -o "$D/hello-mpich" "$D/hello.c"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 60 "$OMPI_RUN" --oversubscribe -n 2 "$D/hello-ompi"
    timeout 60 "$MPICH_RUN" -n 2 "$D/hello-mpich"
    rm -rf "$D"
fi
