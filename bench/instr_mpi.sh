#!/usr/bin/env bash
# Instructions libgoal-mpi adds to a blocking collective it leaves to the MPI
# library, counted by callgrind: a developer's probe, and a guard on the
# layer's promise that what stays MPI's costs next to nothing (docs/mpi.md,
# "Blocking collectives").
#
#   bench/instr_mpi.sh PREFIX [--max N]      # Open MPI, 2 ranks
#   make instr-check                          # with its threshold
#
# The program is a loop of MPI_Bcast of 64 bytes on MPI_COMM_WORLD, which the
# layer's table leaves to Open MPI within a host. Rank 0 (the root) runs
# under callgrind, with PREFIX/lib/libgoal-mpi-openmpi.so preloaded, twice:
# for 2,000 and for 10,000 calls. The difference of the self cost of the
# layer's own functions, over the 8,000 calls between, is one call's cost,
# without MPI_Init and MPI_Finalize. With --max N (or INSTR_MPI_MAX=N) it
# exits with status 1 when that count is above N. Skipped (status 0, said)
# where Open MPI's compiler wrapper or launcher is missing.
set -euo pipefail
max=${INSTR_MPI_MAX:-}
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --max) max=${2:?instr_mpi.sh: --max needs a number}; shift 2 ;;
        --max=*) max=${1#--max=}; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
set -- "${args[@]}"
prefix=${1:?usage: bench/instr_mpi.sh PREFIX [--max N]}
layer="$prefix/lib/libgoal-mpi-openmpi.so"
command -v valgrind >/dev/null || { echo "instr_mpi.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
for tool in mpicc.openmpi mpirun.openmpi; do
    command -v "$tool" >/dev/null || { echo "instr_mpi.sh: no $tool: skipped"; exit 0; }
done
[ -e "$layer" ] || { echo "instr_mpi.sh: $layer is not built (make install)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/bcast.c" <<'PROG'
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    char b[64] = { 0 };
    int n = atoi(argv[1]);
    MPI_Init(&argc, &argv);
    for (int i = 0; i < n; i++)
        MPI_Bcast(b, 64, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
PROG
mpicc.openmpi -O2 "$work/bcast.c" -o "$work/bcast"
cat > "$work/rank.sh" <<'WRAP'
#!/usr/bin/env bash
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec valgrind -q --tool=callgrind --callgrind-out-file="$CG_OUT" "$@"; fi
exec "$@"
WRAP
chmod +x "$work/rank.sh"
for k in 2000 10000; do
    # (Open MPI's hwloc says under valgrind that it cannot read the CPU's
    # topology: not a failure.)
    mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to none -x LD_PRELOAD="$layer" \
        -x CG_OUT="$work/cg.$k.out" "$work/rank.sh" "$work/bcast" "$k" > "$work/out.$k" 2>&1 ||
        { cat "$work/out.$k" >&2; echo "instr_mpi.sh: the MPI job failed" >&2; exit 1; }
done
python3 - "$work" "${max:-}" <<'PY'
import collections, re, subprocess, sys

def layer_costs(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--show-percs=no", "--inclusive=no", path],
                         capture_output=True, text=True, check=True).stdout
    c = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([0-9,]+)\s+(\S+?):(.*?) \[(.*)\]$", line)
        if m and "libgoal-mpi" in m.group(4):
            c[m.group(3).strip()] += int(m.group(1).replace(",", ""))
    return c

work, limit = sys.argv[1], sys.argv[2]
a, b = layer_costs(f"{work}/cg.2000.out"), layer_costs(f"{work}/cg.10000.out")
per = {k: (b[k] - a[k]) / 8000 for k in set(a) | set(b)}
total = sum(per.values())
print("rank 0 (root), MPI_Bcast of 64 bytes left to Open MPI, instructions of libgoal-mpi per call "
      "(2000 and 10000 calls, the difference):")
print(f"  in all     {total:8.1f}")
for name, c in sorted(per.items(), key=lambda kv: -kv[1])[:5]:
    if c >= 0.5:
        print(f"  {c:8.1f}  {name[:100]}")
if limit:
    if total > float(limit):
        print(f"instr_mpi.sh: {total:.1f} instructions per call, above the limit of {limit}: the layer's check "
              "of a call it leaves to MPI grew (docs/mpi.md, 'Blocking collectives')", file=sys.stderr)
        sys.exit(1)
    print(f"within the limit of {limit}")
PY
