# The long-runs plan of scripts/gpu_window.sh: what takes hours on the project's 2-core CPU.
# In the background, the JSSP CPU run (configs/experiment/jssp_cpu.yaml, data/jssp_cpu/gd)
# continues from its last.ckpt on the GPU, same recipe, until NCO_JSSP_S seconds (default 380) have passed
# (SIGTERM: last.ckpt keeps the last whole epoch). In the foreground, two all-10,000 decodes:
# POMO CVRP100 x8 augment x 100 starts (issue 43) and the BQ TSP50 x8 augment (issue 43's
# target). Then the run's snapshot (best.pt, last.ckpt, metrics.csv) as OUT_DIR/jssp_cpu_gd.tgz
# (untar it in the checkout; its log is OUT_DIR/jssp_train.log) and Taillard greedy with best.pt.
# Sourced by gpu_window.sh, which defines step, say, left, $PY and $OUT. NCO_DEVICE (default
# cuda) and NCO_EVAL_LIMIT (default: all instances) make a small CPU rehearsal possible.
# shellcheck shell=bash disable=SC2154
RUN=data/jssp_cpu/gd
DEV=${NCO_DEVICE:-cuda}
LIMIT=${NCO_EVAL_LIMIT:+limit=$NCO_EVAL_LIMIT}
(
    step jssp_train "${NCO_JSSP_S:-380}" env NCO_CACHE_DIR="$RUN/cache" OMP_NUM_THREADS=8 \
        "$PY" -m nco.cli.train experiment=jssp_cpu "hydra.run.dir=$RUN" training.progress=false \
        trainer.enable_progress_bar=false >"$OUT/jssp_train.log" 2>&1
) &
JSSP=$!
# in parts of 2,500 (scripts/eval_in_parts.py), so that a timeout keeps the parts already done
# shellcheck disable=SC2086
step pomo_cvrp100 270 "$PY" scripts/eval_in_parts.py --checkpoint shipped:pomo_cvrp100 \
    --data kool:cvrp100_test --chunk 2500 ${NCO_EVAL_LIMIT:+--limit $NCO_EVAL_LIMIT} \
    --out "$OUT/pomo_cvrp100_aug8ms_all.json" -- \
    search=greedy search.augment=8 search.starts=100 batch_size=50 "device=$DEV" progress=false
if [ -d "$OUT/pomo_cvrp100_aug8ms_all.parts" ]; then # not merged: the parts as one file
    step pomo_parts 20 bash -c 'tar czf "$1/pomo_parts.tgz" -C "$1" pomo_cvrp100_aug8ms_all.parts \
        && rm -r "$1/pomo_cvrp100_aug8ms_all.parts"' _ "$OUT"
fi
# shellcheck disable=SC2086
step bq_tsp50 120 "$PY" -m nco.cli.evaluate checkpoint=shipped:tsp50 data=kool:tsp50_test \
    search=greedy search.augment=8 batch_size=1250 "device=$DEV" progress=false $LIMIT \
    "out=$OUT/tsp50_aug8_all.json"
wait "$JSSP"
say "jssp_train: $(grep -c . "$RUN/logs/metrics.csv") lines in metrics.csv"
step snapshot 30 tar czf "$OUT/jssp_cpu_gd.tgz" "$RUN/best.pt" "$RUN/checkpoints/last.ckpt" \
    "$RUN/logs/metrics.csv"
step taillard 60 "$PY" scripts/jssp_table2.py "checkpoint=$RUN/best.pt" "out=$OUT/taillard_greedy" \
    --methods greedy --groups 15x15 20x15 20x20 30x15 30x20 50x15 50x20 --device "$DEV"
step taillard100 60 "$PY" scripts/jssp_table2.py "checkpoint=$RUN/best.pt" \
    "out=$OUT/taillard_greedy_100x20" --methods greedy --groups 100x20 --device "$DEV"
