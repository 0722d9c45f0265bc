# The long-runs plan of scripts/gpu_window.sh: the JSSP CPU run (configs/experiment/jssp_cpu.yaml,
# data/jssp_cpu/gd) continues from its last.ckpt on the GPU, same recipe, for NCO_JSSP_S seconds
# (default: the budget left less 40 s; SIGTERM then, and last.ckpt keeps the last whole epoch;
# an H200 did an epoch in 1.5-3.3 minutes against 15-26 on one CPU core). Then the run's
# snapshot (best.pt, last.ckpt, metrics.csv) as OUT_DIR/jssp_cpu_gd.tgz: untar it in the
# checkout and commit it. Its log is OUT_DIR/jssp_train.log. Taillard greedy is not here: it is
# latency-bound and no faster on the GPU (docs/gpu.md). The first window's version of this plan
# also decoded POMO CVRP100 and BQ TSP50 on all 10,000 Kool instances (commit 99cb1f7).
# NCO_JSSP_OVERRIDES adds nco-train overrides, split on spaces (e.g.
# "training.instances_per_epoch=32": the CPU probes found one epoch's draw too noisy at 6
# instances, docs/jssp.md, and a GPU decode of 6 instances is latency-bound).
# Sourced by gpu_window.sh, which defines step, say, left, $PY and $OUT.
# shellcheck shell=bash disable=SC2154
RUN=data/jssp_cpu/gd
# (bash -c 'exec ...' sends the run's own output to its log; timeout's SIGTERM reaches it)
# shellcheck disable=SC2016
step jssp_train "${NCO_JSSP_S:-$(($(left) - 40))}" bash -c 'exec "$@" >"$0" 2>&1' \
    "$OUT/jssp_train.log" env NCO_CACHE_DIR="$RUN/cache" OMP_NUM_THREADS=8 \
    "$PY" -m nco.cli.train experiment=jssp_cpu "hydra.run.dir=$RUN" training.progress=false \
    trainer.enable_progress_bar=false ${NCO_JSSP_OVERRIDES:-}
say "jssp_train: $(grep -c . "$RUN/logs/metrics.csv") lines in metrics.csv"
step snapshot 30 tar czf "$OUT/jssp_cpu_gd.tgz" "$RUN/best.pt" "$RUN/checkpoints/last.ckpt" \
    "$RUN/logs/metrics.csv"
