#!/usr/bin/env bash
# Install what goal's Python package needs, and optionally build and install it:
#   - maturin (builds crates/goal-py, PyO3 over goal-rt, into a wheel)
#   - numpy (the arrays), ml_dtypes (bfloat16 arrays), pytest (its tests)
# all with the pip of $PYTHON (default python3), as scripts/install-deps.sh
# installs matplotlib. Idempotent, quiet unless something fails, and fast
# when everything is present already.
#
# Usage: scripts/install-python.sh [--check] [--build PREFIX]
#   --check          install nothing; exit 1 if a module is missing
#   --build PREFIX   then build the wheel into PREFIX/share/goal/python/ (cargo
#                    release, CARGO_TARGET_DIR honoured) and pip-install it for
#                    $PYTHON, replacing an older goal
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-python3}"
CHECK=0
BUILD=""
while [ $# -gt 0 ]; do
    case "$1" in
        --check) CHECK=1 ;;
        --build) BUILD="${2:?--build needs a PREFIX}"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "install-python.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

. "$(dirname "$0")/quiet.sh"

# module name -> pip package name
MODULES=(maturin:maturin numpy:numpy ml_dtypes:ml_dtypes pytest:pytest)
missing=()
for m in "${MODULES[@]}"; do
    mod="${m%%:*}"
    if ! "$PY" -c "import $mod" >/dev/null 2>&1; then
        missing+=("${m##*:}")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$CHECK" -eq 1 ]; then
        echo "install-python.sh: python modules missing for $PY: ${missing[*]}" >&2
        exit 1
    fi
    quiet "$PY" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
fi

if [ -n "$BUILD" ]; then
    OUT="$BUILD/share/goal/python"
    mkdir -p "$OUT"
    rm -f "$OUT"/goal-*.whl
    # maturin is run as a module so that the one just installed for $PY is used.
    quiet "$PY" -m maturin build --release --quiet -m "$ROOT/crates/goal-py/Cargo.toml" -i "$PY" -o "$OUT"
    quiet "$PY" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$OUT"/goal-*.whl
    "$PY" -c 'import goal' || { echo "install-python.sh: goal still not importable by $PY" >&2; exit 1; }
    echo "install-python.sh: goal installed for $PY from $(ls "$OUT"/goal-*.whl)"
fi
