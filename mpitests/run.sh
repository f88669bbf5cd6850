#!/usr/bin/env bash
# mpitests/run.sh PREFIX [NAME...]
#
# The MPI layer's tests (docs/mpi.md): plain MPI programs, built with each
# MPI's own compiler wrapper (mpicc.openmpi, mpicc.mpich; mpifort.* for
# .f90) and linked against nothing of goal's, run under that MPI's launcher
# with PREFIX/lib/libgoal-mpi-<mpi>.so preloaded:
#     mpirun.openmpi --allow-run-as-root --oversubscribe -np N -x LD_PRELOAD=...
#     mpiexec.mpich -n N -genv LD_PRELOAD ...
# with GOAL_DEBUG=1, so that the layer's report (what ran on goal, what went
# to MPI and why) is in the output to be checked. One line per case, then
#     N passed, M failed, K skipped
# An MPI whose wrapper, launcher or library is missing is skipped, said once.
#
# Directives, from `// key: value` (or `! key: value`) lines of the test:
#   ranks: 1 2 3 4     rank counts (default $MPITEST_RANKS or 1 2 3 4)
#   ranks-openmpi: ... the same for one MPI only (ranks-mpich: ...), over ranks:
#   timeout: 120       seconds per case (default $MPITEST_TIMEOUT or 120)
#   expect: RE         some output line matches the extended regex (repeatable)
#   expect-none: RE    no output line matches it (repeatable)
#   env: K=V           one more variable for the ranks (repeatable)
#   link-goal: yes     build against PREFIX's goal (goal.h, -lgoal) too
#   preload: no        run without the layer (a program of goal and MPI)
#   expect-exit: nonzero  the launcher must exit non-zero, and not by the
#                      timeout (a test that kills a rank)
# A case passes when the launcher exits 0, no line says FAIL and every
# expectation holds; its log is kept under build/mpitests/logs/.
set -u

[ $# -ge 1 ] || { echo "usage: $0 PREFIX [NAME...]" >&2; exit 2; }
PREFIX=$(cd "$1" 2>/dev/null && pwd) || { echo "run.sh: no such prefix: $1" >&2; exit 2; }
shift
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SRC/.." && pwd)
BUILD=${MPITEST_BUILD:-$REPO/build/mpitests}
DEFAULT_RANKS=${MPITEST_RANKS:-1 2 3 4}
DEFAULT_TIMEOUT=${MPITEST_TIMEOUT:-120}
mkdir -p "$BUILD/bin" "$BUILD/logs"

tests=()
for f in "$SRC"/t_*.c "$SRC"/t_*.f90; do
    [ -e "$f" ] || continue
    name=$(basename "${f%.*}")
    if [ $# -gt 0 ]; then
        keep=0
        for want in "$@"; do [ "$want" = "$name" ] || [ "t_$want" = "$name" ] && keep=1; done
        [ $keep = 1 ] || continue
    fi
    tests+=("$f")
done

directive() { sed -n "s@^\(//\|!\) *$2: *@@p" "$1"; }

pass=0 fail=0 skip=0
for mpi in openmpi mpich; do
    lib=$PREFIX/lib/libgoal-mpi-$mpi.so
    case $mpi in
        openmpi) launch=(mpirun.openmpi --allow-run-as-root --oversubscribe); envflag() { printf '%s\n' -x "$1=$2"; } ;;
        mpich) launch=(mpiexec.mpich); envflag() { printf '%s\n' -genv "$1" "$2"; } ;;
    esac
    if [ ! -e "$lib" ] || ! command -v mpicc.$mpi >/dev/null || ! command -v "${launch[0]}" >/dev/null; then
        echo "SKIP $mpi: $lib, mpicc.$mpi or ${launch[0]} missing"
        skip=$((skip + ${#tests[@]}))
        continue
    fi
    for t in "${tests[@]}"; do
        name=$(basename "${t%.*}")
        bin=$BUILD/bin/$name-$mpi
        case $t in
            *.f90) cc=mpifort.$mpi ;;
            *) cc=mpicc.$mpi ;;
        esac
        if ! command -v $cc >/dev/null; then
            echo "SKIP $name ($mpi): no $cc"; skip=$((skip + 1)); continue
        fi
        extra=()
        [ "$(directive "$t" link-goal)" != yes ] || extra=(-I"$PREFIX/include" -L"$PREFIX/lib" -lgoal -Wl,-rpath,"$PREFIX/lib")
        if ! $cc -O1 -g -Wall "$t" -o "$bin" -lm -lpthread "${extra[@]}" > "$BUILD/logs/$name-$mpi.build.log" 2>&1; then
            echo "FAIL $name ($mpi): does not build (see $BUILD/logs/$name-$mpi.build.log)"
            fail=$((fail + 1)); continue
        fi
        ranks=$(directive "$t" ranks-$mpi); [ -n "$ranks" ] || ranks=$(directive "$t" ranks); ranks=${ranks:-$DEFAULT_RANKS}
        tmo=$(directive "$t" timeout); tmo=${tmo:-$DEFAULT_TIMEOUT}
        for n in $ranks; do
            log=$BUILD/logs/$name-$mpi-$n.log
            envs=()
            while IFS= read -r kv; do
                [ -n "$kv" ] || continue
                mapfile -t -O ${#envs[@]} envs < <(envflag "${kv%%=*}" "${kv#*=}")
            done < <([ "$(directive "$t" preload)" = no ] || printf 'LD_PRELOAD=%s\n' "$lib"
                     printf 'GOAL_DEBUG=1\n'; directive "$t" env)
            start=$(date +%s%N)
            timeout -k 5 "$tmo" "${launch[@]}" -n "$n" "${envs[@]}" "$bin" < /dev/null > "$log" 2>&1
            rc=$?
            ms=$(( ($(date +%s%N) - start) / 1000000 ))
            why=""
            if [ "$(directive "$t" expect-exit)" = nonzero ]; then
                [ $rc != 0 ] || why="exit status 0, expected a failure"
                # (mpirun exits 137 itself when a rank was killed by signal 9)
                [ $rc != 124 ] && [ $ms -lt $((tmo * 1000)) ] || why="timed out after ${tmo}s"
            else
                [ $rc = 0 ] || why="exit status $rc$([ $rc = 124 ] && echo " (timed out after ${tmo}s)")"
            fi
            [ -n "$why" ] || ! grep -q "FAIL" "$log" || why="a FAIL line"
            while IFS= read -r re; do
                [ -n "$re" ] && [ -z "$why" ] && ! grep -Eq -- "$re" "$log" && why="nothing matches /$re/ (exit status $rc after ${ms} ms)"
            done < <(directive "$t" expect)
            while IFS= read -r re; do
                [ -n "$re" ] && [ -z "$why" ] && grep -Eq -- "$re" "$log" && why="a line matches /$re/: $(grep -Em1 -- "$re" "$log")"
            done < <(directive "$t" expect-none)
            if [ -z "$why" ]; then
                printf 'ok   %s (%s, %d ranks, %d.%01ds)\n' "$name" "$mpi" "$n" $((ms / 1000)) $((ms % 1000 / 100)); pass=$((pass + 1))
            else
                printf 'FAIL %s (%s, %d ranks): %s; log %s\n' "$name" "$mpi" "$n" "$why" "$log"
                tail -n 15 "$log" | sed 's/^/    /'
                fail=$((fail + 1))
            fi
        done
    done
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
