#!/usr/bin/env bash
# SI GD with light-decoder policies at N=100 (issue 38, docs/light_si.md): four resumable runs
# in data/light/<run>/, trained one after another, one thread each, in chunks.
#
#   scripts/light_runs.sh 3                      # every run up to 3 epochs, in turn
#   scripts/light_runs.sh 5 tsp100_ft            # one run up to 5 epochs
#   nohup scripts/light_runs.sh 3 > /dev/null 2>&1 &
#
# Validation references are cached in data/light/cache (committed; the CVRP ones were computed
# again on 2026-11-27, after the first machine's cache was lost: see docs/light_si.md).
# Rerunning continues: nco-train resumes from data/light/<run>/checkpoints/last.ckpt (the epoch
# in progress when a run is killed is repeated). Each run's output goes to data/light/<run>.log.
# Fine-tuning rates: chosen by scripts/light_lr_probe.py (data/results/light/lr_probe_*.json).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/light_runs.sh EPOCHS [RUN...]}
shift
runs=("$@")
if [ ${#runs[@]} -eq 0 ]; then
  runs=(tsp100_ft tsp100_scratch cvrp100_ft cvrp100_scratch)
fi
for run in "${runs[@]}"; do
  case $run in
    tsp100_scratch) args=(experiment=tsp100_light_gumbeldore) ;;
    tsp100_ft) args=(experiment=tsp100_light_gumbeldore
                     init_checkpoint=data/checkpoints/pomo_tsp100/best.pt training.lr=1e-5) ;;
    cvrp100_scratch) args=(experiment=cvrp100_light_gumbeldore) ;;
    cvrp100_ft) args=(experiment=cvrp100_light_gumbeldore
                      init_checkpoint=data/checkpoints/pomo_cvrp100/best.pt training.lr=1e-5) ;;
    # cvrp100_ft at the imported model's own training capacity (50) instead of 40..100
    cvrp100_ft50) args=(experiment=cvrp100_light_gumbeldore problem.env.capacity_range=null
                        init_checkpoint=data/checkpoints/pomo_cvrp100/best.pt training.lr=1e-5) ;;
    # the same at a 5x larger rate, validated on the first 2,000 of Kool's validation set
    cvrp100_ft50_lr5e-5) args=(experiment=cvrp100_light_gumbeldore problem.env.capacity_range=null
                               init_checkpoint=data/checkpoints/pomo_cvrp100/best.pt training.lr=5e-5
                               training.val_data=kool:cvrp100_val training.val_limit=2000) ;;
    # cvrp100_ft50_lr5e-5 with POMO's multi-start greedy (100 first customers, best kept) as
    # the sampler instead of Gumbeldore 32x4, each epoch trained from the best weights
    cvrp100_ft50_ms) args=(experiment=cvrp100_light_gumbeldore problem.env.capacity_range=null
                           init_checkpoint=data/checkpoints/pomo_cvrp100/best.pt training.lr=5e-5
                           search=greedy search.starts=100 training.p_min_schedule=null
                           training.restart_from_best=true
                           training.val_data=kool:cvrp100_val training.val_limit=2000) ;;
    *) echo "light_runs.sh: unknown run $run (tsp100_scratch tsp100_ft cvrp100_scratch cvrp100_ft cvrp100_ft50 cvrp100_ft50_lr5e-5 cvrp100_ft50_ms)" >&2
       exit 2 ;;
  esac
  mkdir -p "data/light/$run"
  echo "$(date -u +%FT%TZ) $run -> epoch $target" >> "data/light/$run.log"
  # validation references cached in the committed data/light/cache, so that every machine
  # validates against the same ones
  OMP_NUM_THREADS=1 NCO_CACHE_DIR=data/light/cache .venv/bin/nco-train "${args[@]}" trainer.max_epochs="$target" \
    hydra.run.dir="data/light/$run" >> "data/light/$run.log" 2>&1
done
