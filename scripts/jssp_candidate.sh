#!/usr/bin/env bash
# Evaluate the JSSP CPU run's best.pt as a candidate for `shipped:jssp`, on one thread, in the
# order the decision needs (about an hour on a quiet core):
#   1. greedy on 100 fresh instances of five sizes against FDD/MWKR, paired with the checkpoints
#      of an earlier comparison (scripts/jssp_compare.py --with; only the candidate is decoded);
#   2. greedy on all 80 Taillard instances;
#   3. the 15x15 rows (beam 16, SBS 16 p=0.8, GD 32x4 p_min 0.8) and SBS 16 on 20x15
#      (scripts/jssp_cells.sh; more cells of the same file: run it with the same tag).
#     bash scripts/jssp_candidate.sh data/results/jssp_cpu/compare_e51_e69.json [RUN]
# RUN defaults to data/jssp_cpu/gd. The epoch comes from best.pt's meta; the file is first copied
# to $TMPDIR (the run may promote another while this works). Outputs are named by the epoch
# (data/results/jssp_cpu/{compare_ePREV_eNN.json,taillard_*_epochNN.*}); a stage whose output
# exists is skipped, so rerunning the same command continues.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WITH="${1:?usage: $0 <earlier compare JSON> [run folder]}"
RUN="${2:-$ROOT/data/jssp_cpu/gd}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
R="$ROOT/data/results/jssp_cpu"
[[ -f "$WITH" ]] || { echo "$WITH: no such comparison JSON" >&2; exit 2; }
[[ -f "$RUN/best.pt" ]] || { echo "$RUN/best.pt: no such checkpoint" >&2; exit 2; }
if [[ ! "$(basename "$WITH")" =~ _e([0-9]+)\.json$ ]]; then
    echo "$WITH: expected a name ending in _eNN.json (the newest checkpoint it holds)" >&2
    exit 2
fi
PREV="${BASH_REMATCH[1]}"
EPOCH="$("$PYTHON" -c "import sys, torch; print(torch.load(sys.argv[1], weights_only=True)['meta']['epoch'])" "$RUN/best.pt")"
CKPT="${TMPDIR:-/tmp}/jssp_e$EPOCH.pt"
[[ -f "$CKPT" ]] || cp "$RUN/best.pt" "$CKPT"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cd "$ROOT"
echo "candidate: epoch $EPOCH ($CKPT), paired with $WITH"

COMPARE="$R/compare_e${PREV}_e$EPOCH.json"
if [[ -f "$COMPARE" ]]; then
    echo "skip: $COMPARE exists"
else
    echo "$(date -u +%H:%M:%S) comparison -> $COMPARE"
    "$PYTHON" scripts/jssp_compare.py --checkpoints "e$EPOCH=$CKPT" --with "$WITH" \
        --sizes 15x15 20x15 20x20 30x15 30x20 --num 100 --out "$COMPARE"
fi
PYTHON="$PYTHON" RESULTS="$R" bash scripts/jssp_cells.sh "$CKPT" "epoch$EPOCH" greedy:all \
    sbs16:15x15 sbs16:20x15 beam16:15x15 gd32x4:15x15
echo "$(date -u +%H:%M:%S) candidate epoch $EPOCH evaluated; the files name $CKPT as the checkpoint"
