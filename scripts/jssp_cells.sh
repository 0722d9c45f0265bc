#!/usr/bin/env bash
# Table 2 cells of one JSSP checkpoint on Taillard, one after another on one thread, each into
# $RESULTS/taillard_<method>_<group>_<tag>.{md,json} (`<method>:all` runs every group into
# taillard_<method>_<tag>.*). A cell whose JSON exists is skipped, and a cell is decoded CHUNK
# instances per run (default 1) with each run kept in <output>.parts/, so rerunning the same
# command continues, inside a stopped cell from its last finished chunk. The tables are merged
# by scripts/jssp_table2.py --merge (docs/jssp.md).
#   bash scripts/jssp_cells.sh <checkpoint> <tag> <method>:<group|all>...
#   bash scripts/jssp_cells.sh /tmp/jssp_e51.pt epoch51 sbs16:50x20 beam16:50x20 greedy:all
# Methods and groups are those of scripts/jssp_table2.py. RESULTS (default
# data/results/jssp_cpu), LIMIT (first N instances per group), CHUNK, LABEL (the outputs'
# `checkpoint` field, e.g. the shipped file a copy was made of; default the checkpoint path),
# SEED and REPEATS (the stochastic rows' first seed and runs; more repeats of a cell go to another
# tag, e.g. SEED=1235 REPEATS=4 ... epoch51_s1235, and --merge joins them), DEVICE (default cpu;
# the `table2` GPU plan sets cuda), SHARDS (default 1: that many processes side by side per
# cell, each decoding every SHARDS-th chunk into the cell's .parts/, then one merge; on a GPU,
# which one instance leaves latency-bound) and PYTHON override.
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
"$PYTHON" - "$ROOT/scripts" "$@" <<'PY'  # every cell is checked before the first one runs
import sys
sys.path.insert(0, sys.argv[1])
from jssp_table2 import GROUPS, METHODS
for spec in sys.argv[2:]:
    method, sep, group = spec.partition(":")
    if not sep or method not in METHODS or group not in (*GROUPS, "all"):
        print(f"{spec}: expected <method>:<group> or <method>:all, with a method of "
              f"{list(METHODS)} and a group of {list(GROUPS)}", file=sys.stderr)
        sys.exit(2)
PY
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
mkdir -p "$RESULTS"
for spec in "$@"; do
    method="${spec%%:*}"
    group="${spec#*:}"
    if [[ "$group" == all ]]; then  # jssp_table2.py's default: every group
        out="$RESULTS/taillard_${method}_$TAG"
        groups=()
    else
        out="$RESULTS/taillard_${method}_${group}_$TAG"
        groups=(--groups "$group")
    fi
    if [[ -f "$out.json" ]]; then
        echo "skip: $out.json exists"
        continue
    fi
    echo "$(date -u +%H:%M:%S) $method on $group -> $out"
    cmd=("$PYTHON" "$ROOT/scripts/jssp_table2.py" --checkpoint "$CKPT" --device "${DEVICE:-cpu}"
        --out "$out" "${groups[@]}" --methods "$method" --chunk "${CHUNK:-1}"
        ${LIMIT:+--limit "$LIMIT"} ${LABEL:+--label "$LABEL"} ${SEED:+--seed "$SEED"}
        ${REPEATS:+--repeats "$REPEATS"})
    if ((${SHARDS:-1} > 1)); then
        pids=()
        for ((i = 0; i < SHARDS; i++)); do
            "${cmd[@]}" --shard "$i/$SHARDS" &
            pids+=($!)
        done
        trap 'kill "${pids[@]}" 2>/dev/null; exit 143' TERM INT  # a stopped script stops its shards
        failed=0
        for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
        trap - TERM INT
        ((failed == 0)) || { echo "a shard of $out failed; its finished chunks stay in $out.parts/" >&2; exit 1; }
    fi
    "${cmd[@]}"  # with SHARDS, only merges the chunks the shards wrote
done
echo "$(date -u +%H:%M:%S) cells of $TAG done"
