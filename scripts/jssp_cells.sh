#!/usr/bin/env bash
# Table 2 cells of one JSSP checkpoint on Taillard, one after another on one thread, each into
# $RESULTS/taillard_<method>_<group>_<tag>.{md,json} (`<method>:all` runs every group into
# taillard_<method>_<tag>.*). A cell whose JSON exists is skipped, so rerunning the same command
# continues; a cell that was stopped starts again. The tables are merged by scripts/jssp_table2.py
# --merge (docs/jssp.md).
#   bash scripts/jssp_cells.sh <checkpoint> <tag> <method>:<group|all>...
#   bash scripts/jssp_cells.sh /tmp/jssp_e51.pt epoch51 sbs16:50x20 beam16:50x20 greedy:all
# Methods and groups are those of scripts/jssp_table2.py. RESULTS (default
# data/results/jssp_cpu), LIMIT (first N instances per group) and PYTHON override.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage="usage: $0 <checkpoint> <tag> <method>:<group|all>..."
CKPT="${1:?$usage}"
TAG="${2:?$usage}"
shift 2
[[ $# -gt 0 ]] || { echo "$usage" >&2; exit 2; }
[[ -f "$CKPT" ]] || { echo "$CKPT: no such checkpoint" >&2; exit 2; }
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
RESULTS="${RESULTS:-$ROOT/data/results/jssp_cpu}"
for spec in "$@"; do  # check every cell before the first one runs
    if [[ ! "$spec" =~ ^[a-z0-9]+:(all|[0-9]+x[0-9]+)$ ]]; then
        echo "$spec: expected <method>:<group> such as sbs16:50x20, or <method>:all" >&2
        exit 2
    fi
done
"$PYTHON" - "$ROOT/scripts" "$@" <<'PY'  # methods and groups of scripts/jssp_table2.py
import sys
sys.path.insert(0, sys.argv[1])
from jssp_table2 import GROUPS, METHODS
for spec in sys.argv[2:]:
    method, group = spec.split(":")
    if method not in METHODS or group not in (*GROUPS, "all"):
        print(f"{spec}: expected a method of {list(METHODS)}, a group of {[*GROUPS, 'all']}",
              file=sys.stderr)
        sys.exit(2)
PY
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
mkdir -p "$RESULTS"
for spec in "$@"; do
    method="${spec%%:*}"
    group="${spec#*:}"
    if [[ "$group" == all ]]; then
        out="$RESULTS/taillard_${method}_$TAG"
        groups="15x15 20x15 20x20 30x15 30x20 50x15 50x20 100x20"
    else
        out="$RESULTS/taillard_${method}_${group}_$TAG"
        groups="$group"
    fi
    if [[ -f "$out.json" ]]; then
        echo "skip: $out.json exists"
        continue
    fi
    echo "$(date -u +%H:%M:%S) $method on $groups -> $out"
    # shellcheck disable=SC2086  # $groups is a list of words
    "$PYTHON" "$ROOT/scripts/jssp_table2.py" --checkpoint "$CKPT" --device cpu --out "$out" \
        --groups $groups --methods "$method" ${LIMIT:+--limit "$LIMIT"}
done
echo "$(date -u +%H:%M:%S) cells of $TAG done"
