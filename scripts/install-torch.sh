#!/usr/bin/env bash
# Install PyTorch (CPU) for the goal torch.distributed backend (python/goal_torch)
# with the pip of $PYTHON (default python3). Idempotent and quiet: does nothing
# when torch already imports. Tries PyTorch's CPU-only wheel index first (no
# CUDA libraries, ~200 MB); when that index is unreachable, plain `pip install
# torch` from PyPI (CUDA libraries included, several GB, still runs on the CPU).
#
# Usage: scripts/install-torch.sh [--check] [--build PREFIX] [--or-skip]
#   --check          install nothing; exit 1 if torch is missing
#   --build PREFIX   then build goal_torch (python/goal_torch, a C++ extension
#                    built by torch.utils.cpp_extension against this torch and
#                    PREFIX's libgoal.so, which `make install PREFIX=...` puts
#                    there) and pip-install it for $PYTHON
#   --or-skip        if torch cannot be installed, say so and exit 0 without
#                    building (the tests then skip, saying why): `make test`
# Prints the installed version. TORCH_SPEC overrides the requirement (default
# "torch"); written and tested against torch 2.15.0.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-python3}"
SPEC="${TORCH_SPEC:-torch}"
CHECK=0
BUILD=""
SKIP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --check) CHECK=1 ;;
        --build) BUILD="${2:?--build needs a PREFIX}"; shift ;;
        --or-skip) SKIP=1 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "install-torch.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
. "$(dirname "$0")/quiet.sh"

if "$PY" -c 'import torch' >/dev/null 2>&1; then
    echo "install-torch.sh: torch $("$PY" -c 'import torch; print(torch.__version__)') present"
elif [ "$CHECK" -eq 1 ]; then
    echo "install-torch.sh: torch missing for $PY" >&2
    exit 1
else
    PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
    if ! timeout 900 "${PIP[@]}" --retries 1 --timeout 20 --index-url https://download.pytorch.org/whl/cpu "$SPEC" >"$LOG" 2>&1; then
        echo "install-torch.sh: PyTorch's CPU-only index failed, installing PyPI's torch (CUDA libraries included)" >&2
        if ! "${PIP[@]}" "$SPEC" >"$LOG" 2>&1; then
            echo "install-torch.sh: failed: pip install $SPEC" >&2
            cat "$LOG" >&2
            if [ "$SKIP" -eq 1 ]; then
                echo "install-torch.sh: torch cannot be installed: goal_torch not built, its tests will be skipped" >&2
                exit 0
            fi
            exit 1
        fi
    fi
    echo "install-torch.sh: torch $("$PY" -c 'import torch; print(torch.__version__)') installed"
fi

# The installed extension, if newer than its sources, libgoal.so and torch:
# then there is nothing to build (compiling against torch takes minutes).
up_to_date() {
    "$PY" - "$ROOT/python/goal_torch" "$1/lib/libgoal.so" <<'PY' 2>/dev/null
import glob, os, sys, importlib.util, torch
spec = importlib.util.find_spec("goal_torch._C")
if spec is None or spec.origin is None or spec.origin.startswith(sys.argv[1]):
    sys.exit(1)
built = os.path.getmtime(spec.origin)
deps = glob.glob(os.path.join(sys.argv[1], "goal_torch", "**", "*.*"), recursive=True)
deps += [os.path.join(sys.argv[1], "setup.py"), sys.argv[2], torch.__file__]
sys.exit(0 if all(os.path.getmtime(d) < built for d in deps if not d.endswith(".so")) else 1)
PY
}

if [ -n "$BUILD" ] && up_to_date "$BUILD"; then
    echo "install-torch.sh: goal_torch installed and newer than its sources, libgoal.so and torch"
elif [ -n "$BUILD" ]; then
    # setuptools builds in the source tree's build/, which is emptied first
    # (it would reuse objects whose headers changed); --no-build-isolation so
    # that the extension is built against the torch just installed.
    rm -rf "$ROOT/python/goal_torch/build"
    # Without build isolation pip needs setuptools' bdist_wheel from this
    # Python: built in since setuptools 70.1, the `wheel` package before
    # (a fresh venv of Python 3.11 has setuptools 65 and no wheel).
    if ! "$PY" -c 'import setuptools.command.bdist_wheel' >/dev/null 2>&1 && ! "$PY" -c 'import wheel' >/dev/null 2>&1; then
        quiet "$PY" -m pip install --quiet --disable-pip-version-check wheel
    fi
    quiet env GOAL_PREFIX="$(cd "$BUILD" && pwd)" "$PY" -m pip install --quiet --disable-pip-version-check \
        --no-build-isolation --no-deps --force-reinstall "$ROOT/python/goal_torch"
    (cd / && "$PY" -c 'import goal_torch') || { echo "install-torch.sh: goal_torch not importable by $PY" >&2; exit 1; }
    echo "install-torch.sh: goal_torch built against $BUILD/lib/libgoal.so and installed for $PY"
fi
