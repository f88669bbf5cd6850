#!/usr/bin/env bash
# Instructions per Run+Wait of a small message, counted by callgrind: a
# developer's probe for the software path (see bench/instr_pingpong.c), and
# a guard on it.
#
#   bench/instr.sh PREFIX [BYTES] [ITERATIONS] [--max N]   # default 8 bytes, 20000
#   GOAL_PROGRESS=thread bench/instr.sh PREFIX             # another progress mode
#   make instr-check                                       # the guard, with its threshold
#   bench/instr.sh PREFIX barrier 10000 --ranks 4          # AUTO's barrier, messages early
#
# Rank 0 runs under callgrind twice, for ITERATIONS/5 and ITERATIONS
# iterations; the difference divided by the iterations between is one
# iteration's cost, without GOAL_Init, compilation and Finalize. Rank 1 runs
# natively and spins in its Wait (GOAL_SPIN_US of 2 s) instead of sleeping,
# so it answers at once and rank 0 finds each reply at its first poll: the
# count repeats to a tenth of an instruction from run to run. Rank 0's
# schedule (a send and a receive, independent) is the shape of a 2-rank
# barrier's, so this is the barrier's path without the waiting.
#
# Prints rank 0's instructions per iteration in all, in GOAL_Run and in
# GOAL_Wait, and its ten costliest functions (self cost, inlined callees
# included). With --max N (or INSTR_MAX=N) it exits with status 1 when the
# count in all is above N. Under valgrind (3.19 knows no pidfd_open) goal
# watches its peers through /proc and reserves a 256 MiB shared heap, by
# itself.
#
# With `barrier` for BYTES, rank 0 runs AUTO's barrier among --ranks ranks
# (default 2) and the others run natively, without real-time priority
# (with more ranks than cores a spinning real-time peer would keep rank 0
# off its CPU): they are always ahead of rank 0 under callgrind, so every
# message reaches rank 0 before the execution it belongs to starts there,
# the path of small collectives whose ranks share cores. Its count repeats
# to about 0.1 %.
set -euo pipefail
max=${INSTR_MAX:-}
ranks=2
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --max) max=${2:?instr.sh: --max needs a number}; shift 2 ;;
        --max=*) max=${1#--max=}; shift ;;
        --ranks) ranks=${2:?instr.sh: --ranks needs a number}; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
set -- "${args[@]}"
prefix=${1:?usage: bench/instr.sh PREFIX [BYTES] [ITERATIONS] [--max N]}
bytes=${2:-8}
n=${3:-20000}
few=$((n / 5))
here=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null || { echo "instr.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
[ "$few" -gt 0 ] || { echo "instr.sh: ITERATIONS must be at least 5 (got $n)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -I"$prefix/include" "$here/instr_pingpong.c" -o "$work/pp" -L"$prefix/lib" -lgoal -Wl,-rpath,"$prefix/lib"
cat > "$work/ranks.sh" <<'WRAP'
#!/usr/bin/env bash
if [ "$GOAL_RANK" = 0 ]; then exec valgrind -q --tool=callgrind --callgrind-out-file="$CG_OUT" "$@"; fi
if [ "$INSTR_RANKS" -gt 2 ]; then exec "$@"; fi
# Where permitted, rank 1 runs as a real-time thread, so that other work on
# the machine does not deschedule it while rank 0 waits (see the header).
if chrt -f 1 true 2>/dev/null; then GOAL_SPIN_US=2000000 exec chrt -f 1 "$@"; fi
GOAL_SPIN_US=2000000 exec "$@"
WRAP
chmod +x "$work/ranks.sh"
reps=${INSTR_REPS:-3}
for r in $(seq "$reps"); do
    for k in "$few" "$n"; do
        CG_OUT="$work/cg.$r.$k.out" GOAL_PROGRESS=${GOAL_PROGRESS:-manual} INSTR_RANKS=$ranks \
            "$prefix/bin/goalrun" -n "$ranks" "$work/ranks.sh" "$work/pp" "$k" "$bytes" 2> >(grep -v "^--" >&2)
    done
done
what="$bytes bytes"
[ "$bytes" = barrier ] && what="AUTO's barrier of $ranks ranks"
echo "rank 0, $what, GOAL_PROGRESS=${GOAL_PROGRESS:-manual}, instructions per iteration ($few and $n iterations, the difference; the least of $reps runs):"
python3 - "$work" "$few" "$n" "$reps" "${max:-}" <<'PY'
import collections, re, subprocess, sys

def costs(path, inclusive):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--show-percs=no",
                          "--inclusive=" + ("yes" if inclusive else "no"), path],
                         capture_output=True, text=True, check=True).stdout
    c = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([0-9,]+)\s+(\S+?):(.*?)( \[.*)?$", line)
        if m:
            name, v = m.group(3).strip(), int(m.group(1).replace(",", ""))
            # Self cost comes in a row per source file the function's code
            # was inlined from: their sum. Inclusive rows repeat the
            # function's total in part: the largest is it.
            c[name] = max(c[name], v) if inclusive else c[name] + v
    return c

work, few, many, reps, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
per = lambda a, b: {k: (b[k] - a[k]) / (many - few) for k in set(a) | set(b)}
# Polls that found nothing (rank 1 descheduled by other work on the
# machine) only add: the least total of the runs is the path's cost.
runs = []
for r in range(1, reps + 1):
    out = lambda k: f"{work}/cg.{r}.{k}.out"
    self_cost = per(costs(out(few), False), costs(out(many), False))
    runs.append((sum(self_cost.values()), r, self_cost))
total, best, self_cost = min(runs)
if reps > 1:
    print("  runs: " + ", ".join(f"{t:.1f}" for t, _, _ in runs))
incl = per(costs(f"{work}/cg.{best}.{few}.out", True), costs(f"{work}/cg.{best}.{many}.out", True))
print(f"  {'in all':<10} {total:8.1f}")
for name in ("GOAL_Run", "GOAL_Wait"):
    print(f"  {name:<10} {incl.get(name, 0):8.1f}")
print("costliest functions (self, with what is inlined into them):")
for name, c in sorted(self_cost.items(), key=lambda kv: -kv[1])[:10]:
    print(f"  {c:8.1f}  {name[:100]}")
if limit:
    if total > float(limit):
        print(f"instr.sh: {total:.1f} instructions per Run+Wait, above the limit of {limit}: "
              "the small-message path grew (see docs/design.md, 'The cost of a small message')", file=sys.stderr)
        sys.exit(1)
    print(f"within the limit of {limit}")
PY
