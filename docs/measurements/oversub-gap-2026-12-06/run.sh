#!/usr/bin/env bash
# 2 ranks on one CPU (as `goal bench coll --noise oversub`), rooted
# collectives of 8 B, the benchmark's shared-memory separator between
# iterations: goal's AUTO (thread) against `manual`, and the probe build's
# switches (probe.patch, GOAL_X) that remove parts of Run's "after a gap"
# judgement. Alternated in ROUNDS rounds; prints one JSON line per run.
#   PROBE=DIR-with-the-patched-libgoal HEAD=DIR-of-0237dc7 [NEW=DIR-of-7d16792] bash run.sh > runs.jsonl
set -euo pipefail
: "${PROBE:?PROBE: the prefix of a build with probe.patch}" "${HEAD:?HEAD: the prefix of main}"
ROUNDS=${ROUNDS:-5}
here=$(cd "$(dirname "$0")" && pwd)
bench=$(cd "$here/../../../bench" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for p in "$PROBE" "$HEAD" ${NEW:+"$NEW"}; do
    cc -O2 -I"$p/include" -I"$bench" -o "$work/gc-$(basename "$p")" "$bench/goal_coll.c" -L"$p/lib" -lgoal -Wl,-rpath,"$p/lib" -lm
done
run() {  # label prefix env...
    local label=$1 p=$2; shift 2
    : > "$work/sep"; truncate -s 4096 "$work/sep"
    env "$@" taskset -c 0 "$p/bin/goalrun" -n 2 --bind-to none "$work/gc-$(basename "$p")" \
        --colls gather,bcast,reduce,scatter --sizes 8 --algs auto --sep-file "$work/sep" 2>/dev/null |
        grep '"test": "coll"' | sed "s/^{/{\"variant\": \"$label\", /"
}
for r in $(seq "$ROUNDS"); do
    run manual "$HEAD" GOAL_PROGRESS=manual
    run auto "$HEAD"
    if [ -n "${NEW:-}" ]; then run auto-new "$NEW"; run manual-new "$NEW" GOAL_PROGRESS=manual; fi
    run auto-probe "$PROBE" GOAL_X=0
    run no-gap "$PROBE" GOAL_X=512
    run no-gap-lift "$PROBE" GOAL_X=2048
    run no-gap-poll "$PROBE" GOAL_X=1024
done
