#!/usr/bin/env bash
# A short cargo-fuzz run of goal-text's checker and goal's compiler (the
# target crates/goal-text/fuzz/fuzz_targets/check.rs, its properties in
# crates/goal-text/fuzz/properties.rs), run by `make fuzz-smoke`, which
# `make test` runs. Fails, naming the input that broke it, if the fuzzer
# finds a crash, a hang or a broken property.
#
# Installs what it needs when missing, and says so: the nightly toolchain
# (`rustup toolchain install nightly --profile minimal`) and cargo-fuzz
# (`cargo install cargo-fuzz --locked`). Both stay installed, so later runs
# only build the target (incrementally, in $CARGO_TARGET_DIR/fuzz or
# target/fuzz) and fuzz.
#
# Seeds: the corpus files (tests/goal-corpus/) and, when a goal binary is
# built, a few of goal's collectives as `goal export` writes them. The
# fuzzer's own corpus grows in build/fuzz/corpus/check (kept between runs);
# a crash is written to build/fuzz/artifacts/check/.
#
# Usage: scripts/fuzz-smoke.sh [SECONDS]    (default 45, or $FUZZ_SECONDS)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/quiet.sh

SECONDS_TO_FUZZ="${1:-${FUZZ_SECONDS:-45}}"
case "$SECONDS_TO_FUZZ" in
    ''|*[!0-9]*) echo "fuzz-smoke: SECONDS must be a whole number, not '$SECONDS_TO_FUZZ'" >&2; exit 2 ;;
esac
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/fuzz"
WORK="$PWD/build/fuzz"
CORPUS="$WORK/corpus/check"
SEEDS="$WORK/seeds/check"
ARTIFACTS="$WORK/artifacts/check"

if ! command -v rustup > /dev/null; then
    echo "fuzz-smoke: rustup is not installed; cargo-fuzz needs the nightly toolchain, which rustup installs" >&2
    exit 1
fi
if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz-smoke: installing the nightly toolchain (cargo-fuzz needs it)"
    quiet rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version > /dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz (cargo install cargo-fuzz --locked)"
    quiet cargo install cargo-fuzz --locked
fi

mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"
rm -f "$ARTIFACTS"/*  # reported by the run that found them
rm -f "$SEEDS"/*
cp tests/goal-corpus/*.goal tests/goal-corpus/*.g2 "$SEEDS"/
GOAL="${CARGO_TARGET_DIR:-target}/release/goal"
if [ -x "$GOAL" ]; then
    for c in "barrier bruck 8" "bcast binomial 7" "allreduce ring 4" "allreduce recursive_doubling 8" "alltoall linear 3"; do
        set -- $c
        "$GOAL" export --coll "$1" --alg "$2" --ranks "$3" --bytes 1K -o "$SEEDS/export-$1-$2-$3.goal"
    done
fi

FUZZ=(cargo +nightly fuzz)
OPTS=(--fuzz-dir crates/goal-text/fuzz --target-dir "$TARGET_DIR")
echo "fuzz-smoke: building the target (cargo +nightly fuzz build check)"
quiet "${FUZZ[@]}" build "${OPTS[@]}" check

echo "fuzz-smoke: fuzzing goal-text's checker and goal's compiler for $SECONDS_TO_FUZZ s ($(ls "$SEEDS" | wc -l) seeds, $(ls "$CORPUS" | wc -l) inputs kept from earlier runs)"
# -timeout: an input that takes 10 s is a hang; -rss_limit_mb: memory is
# bounded by the input, which is at most -max_len bytes.
if ! "${FUZZ[@]}" run "${OPTS[@]}" check "$CORPUS" "$SEEDS" -- \
        -max_total_time="$SECONDS_TO_FUZZ" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 > "$LOG" 2>&1; then
    tail -n 60 "$LOG" >&2
    found="$(ls -t "$ARTIFACTS" 2>/dev/null | head -n 1)"
    echo >&2
    if [ -n "$found" ]; then
        echo "fuzz-smoke: FAILED: the fuzzer found an input that breaks goal-text's checker or goal's compiler: $ARTIFACTS/$found" >&2
        echo "fuzz-smoke: reproduce with: cargo +nightly fuzz run ${OPTS[*]} check $ARTIFACTS/$found" >&2
    else
        echo "fuzz-smoke: FAILED: cargo fuzz run exited with an error before finding an input (its output is above)" >&2
    fi
    exit 1
fi
runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOG" | grep -o '[0-9]*$' || echo '?')"
echo "fuzz-smoke: no crash in $runs inputs over $SECONDS_TO_FUZZ s ($(ls "$CORPUS" | wc -l) inputs in build/fuzz/corpus/check)"
