#!/usr/bin/env bash
# ctests/run.sh PREFIX [NAME...]
#
# Builds every ctests/t_*.c against the goal installed in PREFIX (through
# pkg-config, as a user would), then runs each test under PREFIX/bin/goalrun
# and prints one line per case and a summary line:
#     N passed, M failed, K skipped
# Exit status: 0 if nothing failed, 1 otherwise (2 for usage/setup errors).
#
# NAME... restricts the run to the given tests (t_sizes or sizes).
#
# Directives, read from `// key: value` lines at the top of a test:
#   // ranks: 2 3 4      rank counts to run at (default: $CTEST_RANKS or 1 2 3 4 7)
#   // modes: 2 3        also run with GOAL_PROGRESS=manual and =thread at these
#                        rank counts (the default runs leave GOAL_PROGRESS unset)
#   // all-modes: 2 3    also run with every other GOAL_PROGRESS mode (manual,
#                        thread, spin, kernel) at these rank counts
#   // timeout: 150      goalrun --timeout for this test's cases, in seconds
#                        (default $CTEST_TIMEOUT), for the few that move GiBs
#   // memcheck: 2       also run every rank under valgrind's memcheck at these
#                        rank counts: any memory error, or memory definitely
#                        lost at exit, fails the case (skipped without valgrind)
#   // expect-fail: RE   the case must exit non-zero and its output must match
#                        the extended regex RE (case-insensitive); repeatable
#   // expect-survivors: RE
#                        with expect-fail: exactly N-1 output lines match RE
#                        (one per rank that was not killed)
# A test exits 77 to say "skipped" (every rank does it the same way); a case
# also counts as skipped when goalrun exits non-zero, the output holds the
# test's GOAL-TEST-SKIP marker and no FAIL line (in case goalrun does not pass
# 77 through unchanged).
#
# Environment: CTEST_RANKS (default rank counts), CTEST_TIMEOUT (goalrun
# --timeout, default 60), CTEST_BUILD (build directory, default
# <repo>/build/ctests), CC (default cc), GOAL_STALL_REPORT (default 15: a
# rank whose executions finish nothing for 15 s prints what they wait for,
# so that the log of a hung case says which execution and operation each
# rank waits on; the failure's excerpt below shows those lines first),
# CTEST_STACKS_AFTER (default 25; 0: never): a case still running after
# that many seconds gets its processes' threads written to LOG.threads
# (state, kernel wait channel, CPU and, where gdb is installed, a
# backtrace, taken through valgrind's vgdb for a rank under memcheck),
# shown in the failure's excerpt too.
set -u

usage() { echo "usage: $0 PREFIX [NAME...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
PREFIX=$(cd "$1" 2>/dev/null && pwd) || { echo "run.sh: no such prefix: $1" >&2; exit 2; }
shift

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SRC/.." && pwd)
BUILD=${CTEST_BUILD:-$REPO/build/ctests}
CC=${CC:-cc}
TIMEOUT=${CTEST_TIMEOUT:-60}
DEFAULT_RANKS=${CTEST_RANKS:-1 2 3 4 7}
GOALRUN=$PREFIX/bin/goalrun
export GOAL_STALL_REPORT=${GOAL_STALL_REPORT:-15}
STACKS_AFTER=${CTEST_STACKS_AFTER:-25}

[ -x "$GOALRUN" ] || { echo "run.sh: $GOALRUN is missing or not executable" >&2; exit 2; }
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if ! GOAL_FLAGS=$(pkg-config --cflags --libs goal); then
    echo "run.sh: pkg-config cannot find goal in $PREFIX/lib/pkgconfig" >&2
    exit 2
fi

mkdir -p "$BUILD/bin" "$BUILD/logs" "$BUILD/work"
rm -f "$BUILD"/logs/*.log "$BUILD"/logs/*.log.threads

passed=0 failed=0 skipped=0
failures=()
start_all=$(date +%s)

directive() { # directive FILE KEY -> values of all `// KEY:` lines, one per line
    sed -n "s|^// $2:[[:space:]]*||p" "$1"
}

show_tail() {
    # Stall reports first (see GOAL_STALL_REPORT above), then the threads
    # of a case that ran long (see CTEST_STACKS_AFTER), then the end of the
    # rest of the log, without valgrind's own notes (`--PID--` lines).
    local report='^goal: rank [0-9]+: (no operation has finished| )'
    grep -E "$report" "$1" | head -n 60 | sed 's/^/    | /'
    [ -s "$1.threads" ] && head -n 150 "$1.threads" | sed 's/^/    # /'
    sed -n '1,400p' "$1" | grep -vE -e '^--[0-9]+-- ' -e "$report" | tail -n 25 | sed 's/^/    | /'
}

descendants() { # descendants PID -> PID and every process below it, one a line
    local c
    echo "$1"
    for c in $(pgrep -P "$1"); do descendants "$c"; done
}

# dump_threads PID: the threads of PID and its descendants (a case's
# goalrun and ranks): state, kernel wait channel, CPU; and each rank's
# backtraces (gdb; through vgdb under valgrind), a few frames per thread
# without Rust's own std/core frames.
dump_threads() {
    local root=$1 p t st comm
    for p in $(descendants "$root"); do
        [ -r "/proc/$p/cmdline" ] || continue
        comm=$(cat "/proc/$p/comm" 2>/dev/null)
        echo "process $p ($comm): $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-150)"
        for t in /proc/"$p"/task/*; do
            st=$(cat "$t/stat" 2>/dev/null) || continue
            # Fields after the name: state is the 3rd of the line, CPU the 39th.
            # shellcheck disable=SC2086 # split on purpose
            set -- ${st##*) }
            echo "  thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)): state $1, waits in $(cat "$t/wchan" 2>/dev/null), CPU ${37}"
        done
        case $comm in timeout | goalrun) continue ;; esac
        command -v gdb >/dev/null 2>&1 || continue
        local target=(-p "$p")
        case $comm in memcheck-*) target=(-ex "target remote | vgdb --pid=$p") ;; esac
        timeout 30 gdb -batch -nx -ex 'set pagination off' "${target[@]}" -ex 'thread apply all bt 12' 2>/dev/null |
            grep -E '^(Thread|#)' | grep -vE '^#[0-9]+ +(0x[0-9a-f]+ in )?(std|core)::' | sed -E 's/ \(.*\) at ([^ ]*)$/ at \1/; s/0x[0-9a-f]+ in //; s/^/    /' | cut -c1-160
    done
}

report() { # report STATUS NAME DETAIL [LOG]
    printf '%-5s %-44s %s\n' "$1" "$2" "$3"
    case $1 in
    PASS) passed=$((passed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
    *)
        failed=$((failed + 1))
        failures+=("$2")
        [ -n "${4:-}" ] && [ -f "$4" ] && show_tail "$4"
        ;;
    esac
}

# run_case NAME EXE SRCFILE N MODE
run_case() {
    local name=$1 exe=$2 src=$3 n=$4 mode=$5
    local label="$name n=$n mode=$mode"
    local log="$BUILD/logs/$name.n$n.$mode.log"
    local t0 t1 rc
    local TIMEOUT=$TIMEOUT own
    own=$(directive "$src" timeout | head -n 1)
    [ -n "$own" ] && [ "$own" -gt "$TIMEOUT" ] && TIMEOUT=$own
    t0=$(date +%s.%N)
    (
        cd "$BUILD/work" || exit 125
        local wrap=()
        case $mode in
        default) unset GOAL_PROGRESS ;;
        memcheck)
            unset GOAL_PROGRESS
            wrap=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
                  --show-leak-kinds=definite)
            ;;
        *) export GOAL_PROGRESS=$mode ;;
        esac
        exec timeout -k 5 $((TIMEOUT + 30)) "$GOALRUN" --timeout "$TIMEOUT" -n "$n" "${wrap[@]}" "$exe" "$n"
    ) >"$log" 2>&1 &
    local case_pid=$! watcher=
    rm -f "$log.threads"
    if [ "$STACKS_AFTER" -gt 0 ]; then
        # (Ended below with its sleep if the case ends first.)
        (sleep "$STACKS_AFTER" && kill -0 "$case_pid" 2>/dev/null && dump_threads "$case_pid" >"$log.threads" 2>&1) 2>/dev/null &
        watcher=$!
    fi
    wait "$case_pid"
    rc=$?
    if [ -n "$watcher" ]; then
        # Its sleep, or (without pkill) the watcher itself, leaving the sleep.
        pkill -P "$watcher" 2>/dev/null || kill "$watcher" 2>/dev/null
        wait "$watcher" 2>/dev/null
    fi
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1fs", b - a }')

    local expect_fail survivors
    expect_fail=$(directive "$src" expect-fail)
    survivors=$(directive "$src" expect-survivors)

    if [ "$rc" -eq 77 ]; then
        report SKIP "$label" "($secs, exit 77)"
        return
    fi
    # timeout(1) exits 124, or 137 when it had to KILL; goalrun may use 124
    # for its own --timeout.  137 alone is also 128+SIGKILL from goalrun, so
    # it counts as a timeout only when the outer limit was reached.
    if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ "$(awk -v a="$t0" -v b="$t1" -v l=$((TIMEOUT + 30)) 'BEGIN { print (b - a >= l) }')" = 1 ]; }; then
        report FAIL "$label" "($secs) timed out (exit $rc)" "$log"
        return
    fi
    if [ -z "$expect_fail" ]; then
        if [ "$rc" -eq 0 ]; then
            report PASS "$label" "($secs)"
        elif grep -q 'GOAL-TEST-SKIP' "$log" && ! grep -q 'FAIL' "$log"; then
            report SKIP "$label" "($secs, exit $rc with skip marker)"
        else
            report FAIL "$label" "($secs) exit status $rc" "$log"
        fi
        return
    fi
    # Expected failure.
    if [ "$rc" -eq 0 ]; then
        report FAIL "$label" "($secs) exit status 0, expected a failure" "$log"
        return
    fi
    if grep -q 'GOAL-TEST-SKIP' "$log" && ! grep -q 'FAIL' "$log"; then
        report SKIP "$label" "($secs, exit $rc with skip marker)"
        return
    fi
    local re why=""
    while IFS= read -r re; do
        [ -n "$re" ] || continue
        grep -Eiq -- "$re" "$log" || why="$why; output lacks /$re/"
    done <<<"$expect_fail"
    if [ -n "$survivors" ]; then
        local count
        count=$(grep -Eic -- "$survivors" "$log")
        [ "$count" -eq $((n - 1)) ] || why="$why; $count of $((n - 1)) survivors printed /$survivors/"
    fi
    if [ -z "$why" ]; then
        report PASS "$label" "($secs, failed as expected with exit $rc)"
    else
        report FAIL "$label" "($secs) exit $rc${why}" "$log"
    fi
}

# ------------------------------------------------------------------ select
tests=()
for f in "$SRC"/t_*.c; do
    name=$(basename "$f" .c)
    if [ $# -gt 0 ]; then
        keep=0
        for want in "$@"; do
            [ "$want" = "$name" ] || [ "t_$want" = "$name" ] && keep=1
        done
        [ $keep -eq 1 ] || continue
    fi
    tests+=("$f")
done
[ ${#tests[@]} -gt 0 ] || { echo "run.sh: no test matches: $*" >&2; exit 2; }

# ------------------------------------------------------------------- build
echo "building ${#tests[@]} tests into $BUILD/bin (goal from $PREFIX)"
built=()
for f in "${tests[@]}"; do
    name=$(basename "$f" .c)
    blog="$BUILD/logs/$name.build.log"
    # shellcheck disable=SC2086 # GOAL_FLAGS is a word list by design
    if "$CC" -O2 -Wall -Werror "$f" $GOAL_FLAGS -Wl,-rpath,"$PREFIX/lib" -o "$BUILD/bin/$name" >"$blog" 2>&1; then
        built+=("$f")
    else
        report FAIL "$name build" "(compiler error)" "$blog"
    fi
done

# --------------------------------------------------------------------- run
for f in "${built[@]}"; do
    name=$(basename "$f" .c)
    exe="$BUILD/bin/$name"
    ranks=$(directive "$f" ranks | tr '\n' ' ')
    [ -n "${ranks// /}" ] || ranks=$DEFAULT_RANKS
    for n in $ranks; do
        run_case "$name" "$exe" "$f" "$n" default
    done
    modes=$(directive "$f" modes | tr '\n' ' ')
    for n in $modes; do
        for mode in manual thread; do
            run_case "$name" "$exe" "$f" "$n" "$mode"
        done
    done
    for n in $(directive "$f" all-modes | tr '\n' ' '); do
        for mode in manual thread spin kernel; do
            run_case "$name" "$exe" "$f" "$n" "$mode"
        done
    done
    for n in $(directive "$f" memcheck | tr '\n' ' '); do
        if command -v valgrind >/dev/null 2>&1; then
            run_case "$name" "$exe" "$f" "$n" memcheck
        else
            report SKIP "$name n=$n mode=memcheck" "(valgrind is not installed)"
        fi
    done
done

end_all=$(date +%s)
echo "logs in $BUILD/logs; total $((end_all - start_all)) s"
if [ $failed -gt 0 ]; then
    echo "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
