#!/usr/bin/env bash
# Fails when a file tracked by git is over 1 MB (1 000 000 bytes), so that a clone stays a
# source tree and not a lab notebook: raw benchmark output belongs in results/ (ignored),
# a record in docs/measurements/ keeps a summary of it (docs/measurements/README.md).
#
#   scripts/check-repo.sh          # run by `make repo-check`, which `make test` runs
#
# Prints each offending path with its size, then one closing line,
# "repo-check: N tracked files over 1 MB", and exits 1 if N > 0. Outside a git checkout
# (a source tarball, or git missing) there is nothing to check: it says so and exits 0.
# Sizes are the working tree's; a tracked file deleted there is not counted.
# REPO_CHECK_MAX_BYTES overrides the limit (for trying the check itself).
set -euo pipefail
cd "$(dirname "$0")/.."
max=${REPO_CHECK_MAX_BYTES:-1000000}

if ! command -v git > /dev/null 2>&1; then
    echo "repo-check: skipped: git is not installed, so no tracked files to check"
    exit 0
fi
top=$(git rev-parse --show-toplevel 2> /dev/null || true)
if [ -z "$top" ] || [ "$(cd "$top" && pwd -P)" != "$(pwd -P)" ]; then
    echo "repo-check: skipped: $(pwd -P) is not a git checkout, so no tracked files to check"
    exit 0
fi

over=0
checked=0
while IFS= read -r -d '' path; do
    [ -f "$path" ] && [ ! -L "$path" ] || continue
    checked=$((checked + 1))
    size=$(stat -c %s -- "$path")
    if [ "$size" -gt "$max" ]; then
        printf 'repo-check: %s is %s bytes (%s KiB), over the limit of %s bytes\n' \
            "$path" "$size" "$((size / 1024))" "$max"
        over=$((over + 1))
    fi
done < <(git ls-files -z)

if [ "$max" -eq 1000000 ]; then limit="1 MB"; else limit="$max bytes"; fi
echo "repo-check: $over tracked files over $limit ($checked checked)"
[ "$over" -eq 0 ]
