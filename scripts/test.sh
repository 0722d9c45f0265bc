#!/usr/bin/env bash
# Install (idempotent, quick when already installed) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/python -m pytest -q "$@"
