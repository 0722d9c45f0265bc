#!/usr/bin/env bash
# Create .venv (if needed) and install nco with its dependencies. Idempotent.
# torch comes in as the CPU build 2.13.0 unless a torch is already installed in .venv
# (GPU users: install the torch build for your CUDA into .venv first; any torch >= 2.3 works).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
pip_install() {
    # pip's warnings about this machine's local index folders are noise; keep pip's exit code.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@" 2>&1 \
        | { grep -v "is ignored: it is neither a file nor a directory" || true; }
    return "${PIPESTATUS[0]}"
}
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    pip_install "torch==2.13.0"
fi
pip_install -e ".[dev]"
.venv/bin/python -c "import nco, nco.problems, nco.models, torch, lightning, hydra, ray, ortools, pyvrp" \
    || { echo "install.sh: installation is incomplete" >&2; exit 1; }
