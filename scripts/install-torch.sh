#!/usr/bin/env bash
# Install PyTorch (CPU) for the goal torch.distributed backend (python/goal_torch)
# with the pip of $PYTHON (default python3). Idempotent and quiet: does nothing
# when torch already imports. Tries PyTorch's CPU-only wheel index first (no
# CUDA libraries, ~200 MB); when that index is unreachable, plain `pip install
# torch` from PyPI (CUDA libraries included, several GB, still runs on the CPU).
#
# Usage: scripts/install-torch.sh [--check]
#   --check   install nothing; exit 1 if torch is missing
# Prints the installed version. TORCH_SPEC overrides the requirement (default
# "torch"); the version CI was written against is 2.15.0.
set -euo pipefail
PY="${PYTHON:-python3}"
SPEC="${TORCH_SPEC:-torch}"
if "$PY" -c 'import torch' >/dev/null 2>&1; then
    echo "install-torch.sh: torch $("$PY" -c 'import torch; print(torch.__version__)') present"
    exit 0
fi
if [ "${1:-}" = "--check" ]; then
    echo "install-torch.sh: torch missing for $PY" >&2
    exit 1
fi
LOG="$(mktemp -t install-torch.XXXXXX)"
trap 'rm -f "$LOG"' EXIT
PIP=("$PY" -m pip install --quiet --disable-pip-version-check)
if ! timeout 900 "${PIP[@]}" --index-url https://download.pytorch.org/whl/cpu "$SPEC" >"$LOG" 2>&1; then
    echo "install-torch.sh: the CPU-only index failed, trying PyPI's torch" >&2
    if ! "${PIP[@]}" "$SPEC" >"$LOG" 2>&1; then
        echo "install-torch.sh: failed: pip install $SPEC" >&2
        cat "$LOG" >&2
        exit 1
    fi
fi
echo "install-torch.sh: torch $("$PY" -c 'import torch; print(torch.__version__)') installed"
