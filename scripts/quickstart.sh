#!/usr/bin/env bash
# Install into .venv (idempotent), then run the quickstart job: train a small TSP20 policy by
# Gumbeldore self-improvement on the CPU and print greedy / beam / Gumbeldore gaps to LKH-3.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/nco-demo "$@"
