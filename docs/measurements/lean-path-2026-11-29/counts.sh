#!/usr/bin/env bash
# Events per collective and rank (README.md): perf stat on each of 4 ranks,
# 200 and 1000 timed iterations, the difference divided by 800 and averaged
# over the ranks.
#
#   counts.sh goal PREFIX COLL ALG BYTES       # goalrun -n 4
#   counts.sh openmpi PREFIX COLL 0 BYTES [MCA ARGS...]   # mpirun --oversubscribe
#   PIN=1 counts.sh ...                        # rank r on CPU r % 2 (bench/coll.py's binding)
set -euo pipefail
who=$1 prefix=$2 coll=$3 alg=$4 bytes=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
events=context-switches,syscalls:sys_enter_sched_yield,syscalls:sys_enter_futex,syscalls:sys_enter_process_vm_readv,syscalls:sys_enter_process_vm_writev,syscalls:sys_enter_membarrier,task-clock
cat > "$work/perf.sh" <<WRAP
#!/usr/bin/env bash
rank=\${GOAL_RANK:-\$OMPI_COMM_WORLD_RANK}
exec perf stat -x, -o "$work/perf.\$ITERS.\$rank.txt" -e $events "\$@"
WRAP
chmod +x "$work/perf.sh"
if [ "$who" = goal ]; then
    cc -O2 -I"$prefix/include" "$here/goal_coll_count.c" -o "$work/prog" -L"$prefix/lib" -lgoal -Wl,-rpath,"$prefix/lib"
else
    mpicc.openmpi -O2 "$here/mpi_coll_count.c" -o "$work/prog"
fi
for k in 200 1000; do
    if [ "$who" = goal ]; then
        ITERS=$k "$prefix/bin/goalrun" -n 4 "$work/perf.sh" "$work/prog" "$coll" "$alg" "$bytes" "$k" > /dev/null
    else
        mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none -n 4 -x ITERS=$k ${PIN:+-x PIN} "$@" \
            "$work/perf.sh" "$work/prog" "$coll" 0 "$bytes" "$k" > /dev/null
    fi
done
python3 - "$work" "$who $coll alg=$alg $bytes B" <<'PY'
import collections, sys
work, what = sys.argv[1], sys.argv[2]
def load(k):
    c = collections.Counter()
    for r in range(4):
        for line in open(f"{work}/perf.{k}.{r}.txt"):
            f = line.strip().split(",")
            if len(f) > 3 and f[0][:1].isdigit():
                c[f[2].replace("syscalls:sys_enter_", "")] += float(f[0])
    return c
a, b = load(200), load(1000)
per = {k: (b[k] - a[k]) / 800 / 4 for k in b}
per["task-clock"] *= 1000  # ms -> us
print(what + ": " + " ".join(f"{k}={v:.2f}" for k, v in per.items()))
PY
