# The self-improvement plan of scripts/gpu_window.sh: two training runs share the GPU at once.
# In the background, the JSSP CPU run (data/jssp_cpu/gd) continues from its last.ckpt with
# NCO_JSSP_OVERRIDES (default: 32 instances and 192 steps per epoch, where the CPU can afford 6
# and 96; docs/jssp.md). In the foreground, the shipped BQ TSP50 checkpoint is fine-tuned by SI
# GD on TSP50 (repro_tsp50's model, sampler and validation set) with GPU-sized epochs: 512
# instances and 512 Adam steps of 1024 sub-tours (the paper's 1,024 sub-tours per sampled
# instance), lr 1e-4 warmed up over 128 steps and x0.9 per epoch (the window of 2026-11-27 ran it as plain
# nco-train: data/reproduction/tsp50/finetune-gpu). Then its best.pt is decoded
# greedily with augment 8 on all 10,000 Kool TSP50 test instances (issue 43's target); both
# runs come back as OUT_DIR/jssp_cpu_gd.tgz and OUT_DIR/tsp50_gpu.tgz: untar them in the checkout
# (a second call on the same machine starts from the committed state again, docs/gpu.md).
# Validation references come from data/reproduction/cache (carry it: `slim` untracks it).
# The fine-tune is a stage of the tsp50 study (`nco-study finetune`, so that `nco-study ship`
# can ship it with its provenance): NCO_TSP50_RUN names it (default finetune-gpu2; rerunning
# continues it from its last.ckpt, which the tarball keeps) and NCO_TSP50_INIT its start
# (default the shipped checkpoint). NCO_TRAINER (default gpu) and NCO_DEVICE (cuda) allow a
# CPU rehearsal. Sourced by gpu_window.sh, which defines step, say, left, $PY, $OUT.
# shellcheck shell=bash disable=SC2154,SC2016,SC2086
JSSP_RUN=data/jssp_cpu/gd
TSP_NAME=${NCO_TSP50_RUN:-finetune-gpu2}
TSP_RUN=data/reproduction/tsp50/$TSP_NAME
DEV=${NCO_DEVICE:-cuda}
END=$(($(left) - 100)) # both trainings stop here: time for the snapshots and the decode
(
    step jssp_train "$END" bash -c 'exec "$@" >"$0" 2>&1' "$OUT/jssp_train.log" \
        env NCO_CACHE_DIR="$JSSP_RUN/cache" OMP_NUM_THREADS=6 \
        "$PY" -m nco.cli.train experiment=jssp_cpu "hydra.run.dir=$JSSP_RUN" \
        training.progress=false trainer.enable_progress_bar=false \
        ${NCO_JSSP_OVERRIDES:-training.instances_per_epoch=32 training.batches_per_epoch=192}
) &
JSSP=$!
step tsp50_train "$((END - 5))" bash -c 'exec "$@" >"$0" 2>&1' "$OUT/tsp50_train.log" \
    "$PY" -m nco.cli.study finetune --study tsp50 --name "$TSP_NAME" \
    --init "${NCO_TSP50_INIT:-data/checkpoints/tsp50/best.pt}" --trainer "${NCO_TRAINER:-gpu}" \
    --lr 1e-4 --warmup 128 --lr-decay 0.9 --batch-size 1024 --instances 512 --seed 11 \
    --epochs 100 --threads 6
wait "$JSSP"
say "jssp_train: $(grep -c . "$JSSP_RUN/logs/metrics.csv") lines in metrics.csv"
# the snapshots first: they are what a window is for, the decode can be redone
step snapshot 30 tar czf "$OUT/jssp_cpu_gd.tgz" "$JSSP_RUN/best.pt" \
    "$JSSP_RUN/checkpoints/last.ckpt" "$JSSP_RUN/logs/metrics.csv"
step tsp50_snapshot 30 tar czf "$OUT/tsp50_gpu.tgz" "$TSP_RUN"
if [ -f "$TSP_RUN/best.pt" ]; then
    step tsp50_aug8 60 "$PY" -m nco.cli.evaluate "checkpoint=$TSP_RUN/best.pt" \
        data=kool:tsp50_test search=greedy search.augment=8 batch_size=1250 "device=$DEV" \
        progress=false "out=$OUT/tsp50_gpu_aug8_all.json"
fi
