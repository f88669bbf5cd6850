#!/usr/bin/env bash
# Redraws the figures from their text files: docs/figures/draw.sh [GOAL]
# (GOAL: the goal binary, default target/release/goal of this tree).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
goal=${1:-$here/../../target/release/goal}
for f in "$here"/*.goal; do
    "$goal" draw "$f" -o "${f%.goal}.svg"
done
