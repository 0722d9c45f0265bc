#!/usr/bin/env bash
# Start or continue a JSSP CPU run in the background, on one core, in its committed run folder:
# arm `gd` (default; SI GD, configs/experiment/jssp_cpu.yaml, data/jssp_cpu/gd) or `wor` (SI WOR,
# configs/experiment/jssp_cpu_wor.yaml, data/jssp_cpu/wor). Idempotent: nco-train resumes from
# the folder's checkpoints/last.ckpt when it exists, and nothing starts while the run is alive.
# The validation references are cached inside the run folder, so every resume validates against
# the same CP-SAT makespans; a new arm starts from the GD run's cached references, so the arms'
# gaps compare. Commit the folder (metrics, best.pt, last.ckpt) to keep progress across machines.
#   bash scripts/jssp_cpu_run.sh [gd|wor]    # PYTHON=... to pick another interpreter
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ARM="${1:-gd}"
case "$ARM" in
    gd) EXPERIMENT=jssp_cpu ;;
    wor) EXPERIMENT=jssp_cpu_wor ;;
    *) echo "usage: $0 [gd|wor] (got '$ARM')" >&2; exit 2 ;;
esac
RUN="$ROOT/data/jssp_cpu/$ARM"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
mkdir -p "$RUN"
if [[ -f "$RUN/pid" ]] && kill -0 "$(cat "$RUN/pid")" 2>/dev/null; then
    echo "jssp_cpu_$ARM is running (pid $(cat "$RUN/pid")); log: $RUN/train.log"
    exit 0
fi
if [[ ! -d "$RUN/cache/references" && -d "$ROOT/data/jssp_cpu/gd/cache/references" ]]; then
    mkdir -p "$RUN/cache"
    cp -r "$ROOT/data/jssp_cpu/gd/cache/references" "$RUN/cache/"
fi
cd "$ROOT"
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NCO_CACHE_DIR="$RUN/cache" \
    setsid nohup "$PYTHON" -m nco.cli.train experiment="$EXPERIMENT" hydra.run.dir="$RUN" \
    >> "$RUN/train.log" 2>&1 < /dev/null &
echo $! > "$RUN/pid"
echo "jssp_cpu_$ARM started (pid $!); log: $RUN/train.log"
