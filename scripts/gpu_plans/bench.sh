# The benchmark plan of scripts/gpu_window.sh (the default): the search, policy and training
# benchmarks, then a short JSSP training probe with the budget left. Sourced by gpu_window.sh,
# which defines step, say, left, $PY and $OUT.
# shellcheck shell=bash disable=SC2154
# the target first: 1000 TSP100 x 128 Gumbeldore samples in <= 20 s
step search 240 "$PY" benchmarks/bench_search.py --device cuda --precision bf16 --throughput 1000 \
    --chunk 250 --out "$OUT/search.json"
step policy 240 "$PY" benchmarks/bench_policy.py --device cuda --precisions fp32 bf16 --packing \
    --out "$OUT/policy.json"
step train 240 "$PY" benchmarks/bench_train.py --device cuda \
    --experiments tsp100_gumbeldore jssp_gumbeldore --profile --out "$OUT/train.json"
# JSSP training probe: few instances per epoch, validation without references; the run dir
# (checkpoints/last.ckpt, best.pt, logs/metrics.csv) lies under OUT_DIR.
step jssp_probe 100000 "$PY" -m nco.cli.train experiment=jssp_gumbeldore distributed.workers=0 \
    "trainer.max_epochs=${NCO_PROBE_EPOCHS:-2}" training.instances_per_epoch=64 \
    training.batches_per_epoch=100 training.val_instances=20 training.val_batch_size=20 \
    training.val_gap=false training.progress=false sampling.batch_size=64 \
    distributed.chunk_size=64 "hydra.run.dir=$OUT/jssp_probe" hydra.output_subdir=null \
    hydra/job_logging=disabled
