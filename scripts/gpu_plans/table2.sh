# The Table 2 plan of scripts/gpu_window.sh: cells of the paper's Table 2 for a JSSP checkpoint
# on Taillard, decoded on the GPU by scripts/jssp_cells.sh (DEVICE=cuda) into the checkout's
# data/results/jssp_cpu/taillard_<method>_<group>_<tag>.*, one instance per resumable part
# (`<cell>.parts/`), so a window that runs out keeps the instances it finished and the next
# window, or the CPU, continues the cell (a part belongs to the checkpoint file, not its path, so
# the window also continues parts the CPU decoded from a copy). Cells are every method of
# NCO_METHODS (default gd32x4) on every group of NCO_GROUPS (default 100x20 50x20 50x15 30x20, the
# cells the CPU needs longest for) for each run of NCO_RUNS, one step after another: `tag` or
# `tag:seed:repeats` (the stochastic rows' first seed and runs; default the five runs Table 2
# lacks for the file shipped since 2026-12-07, epoch 120: seed 1234, then 1235-1236 and
# 1237-1238, the tags the CPU runs them under), with NCO_CHECKPOINT (default the shipped
# data/checkpoints/jssp/best.pt, which Table 2 reports) and NCO_SHARDS (processes side by side
# per cell, each on every NCO_SHARDS-th instance: the GPU is latency-bound on one instance, so
# ten shards decode the ten instances of a group at once). Every file the window wrote there
# comes back as OUT_DIR/table2.tgz: untar it in the checkout and commit. Sourced by
# gpu_window.sh (step, pack_new, left, $PY, $OUT).
# shellcheck shell=bash disable=SC2154
cells=()
for method in ${NCO_METHODS:-gd32x4}; do
    for group in ${NCO_GROUPS:-100x20 50x20 50x15 30x20}; do cells+=("$method:$group"); done
done
CKPT=${NCO_CHECKPOINT:-data/checkpoints/jssp/best.pt}
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
for spec in ${NCO_RUNS:-epoch120 epoch120_s1235:1235:2 epoch120_s1237:1237:2}; do
    IFS=: read -r tag seed repeats <<<"$spec"
    step "table2_$tag" "$(($(left) - 40))" env DEVICE="${NCO_DEVICE:-cuda}" PYTHON="$PY" \
        LABEL="$CKPT on ${GPU_NAME:-a GPU}" \
        ${seed:+SEED="$seed"} ${repeats:+REPEATS="$repeats"} \
        ${NCO_SHARDS:+SHARDS="$NCO_SHARDS"} \
        bash scripts/jssp_cells.sh "$CKPT" "$tag" "${cells[@]}"
done
pack_new snapshot data/results/jssp_cpu table2.tgz
