#!/usr/bin/env bash
# Start or continue the JSSP CPU run (configs/experiment/jssp_cpu.yaml) in the background, on one
# core, in the committed run folder data/jssp_cpu/gd. Idempotent: nco-train resumes from
# data/jssp_cpu/gd/checkpoints/last.ckpt when it exists, and nothing starts while the run is
# alive. The validation references are cached inside the run folder, so every resume validates
# against the same CP-SAT makespans. Commit the folder (metrics, best.pt, last.ckpt) to keep
# progress across machines.
#   bash scripts/jssp_cpu_run.sh            # PYTHON=... to pick another interpreter
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUN="${RUN:-$ROOT/data/jssp_cpu/gd}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
mkdir -p "$RUN"
if [[ -f "$RUN/pid" ]] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null; then
    echo "jssp_cpu_gd is running (pid $(cat "$RUN/pid")); log: $RUN/train.log"
    exit 0
fi
cd "$ROOT"
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NCO_CACHE_DIR="$RUN/cache" \
    setsid nohup "$PYTHON" -m nco.cli.train experiment=jssp_cpu hydra.run.dir="$RUN" \
    >> "$RUN/train.log" 2>&1 < /dev/null &
echo $! > "$RUN/pid"
echo "jssp_cpu_gd started (pid $!); log: $RUN/train.log"
