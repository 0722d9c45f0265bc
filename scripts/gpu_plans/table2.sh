# The Table 2 plan of scripts/gpu_window.sh: the JSSP decoders of the paper's Table 2 on Taillard
# groups with a checkpoint, on the GPU (scripts/jssp_table2.py --device cuda), into
# OUT_DIR/table2.{md,json}. NCO_CHECKPOINT (default the shipped data/checkpoints/jssp/best.pt,
# which Table 2 reports; the CPU run's data/jssp_cpu/gd/best.pt is a candidate), NCO_METHODS
# (default gd32x4), NCO_GROUPS (default 15x15) and NCO_REPEATS (default 1) choose the cells.
# Sourced by gpu_window.sh, which defines step, $PY and $OUT.
# shellcheck shell=bash disable=SC2154
# shellcheck disable=SC2086
step table2 100000 "$PY" scripts/jssp_table2.py "checkpoint=${NCO_CHECKPOINT:-data/checkpoints/jssp/best.pt}" \
    "out=$OUT/table2" --methods ${NCO_METHODS:-gd32x4} --groups ${NCO_GROUPS:-15x15} \
    --repeats "${NCO_REPEATS:-1}" --device "${NCO_DEVICE:-cuda}"
