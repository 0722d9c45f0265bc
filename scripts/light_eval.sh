#!/usr/bin/env bash
# Evaluate a light-decoder checkpoint on the Kool test set (issue 38, docs/light_si.md): greedy
# (one trajectory) on the first LIMIT instances, and greedy with augment 8 and multi-start (one
# trajectory per first node: 8 x 100) on the first AUG_LIMIT, into
# data/results/light/si_<problem>100_<name>_{greedy,aug8ms}.json. One thread.
#
#   scripts/light_eval.sh tsp pomo_imported data/checkpoints/pomo_tsp100/best.pt 1000 100
#   scripts/light_eval.sh cvrp ft data/light/cvrp100_ft/best.pt 1000 0      # greedy only
set -euo pipefail
cd "$(dirname "$0")/.."
problem=${1:?usage: scripts/light_eval.sh tsp|cvrp NAME CHECKPOINT [LIMIT] [AUG_LIMIT]}
name=${2:?name}
ckpt=${3:?checkpoint}
limit=${4:-1000}
aug_limit=${5:-100}
out=data/results/light/si_${problem}100_${name}
mkdir -p data/results/light
export OMP_NUM_THREADS=1
.venv/bin/nco-eval checkpoint="$ckpt" data="kool:${problem}100_test" search=greedy \
  limit="$limit" batch_size=100 progress=false out="${out}_greedy.json"
if [ "$aug_limit" -gt 0 ]; then
  .venv/bin/nco-eval checkpoint="$ckpt" data="kool:${problem}100_test" search=greedy \
    search.augment=8 search.starts=100 limit="$aug_limit" batch_size=4 progress=false \
    out="${out}_aug8ms.json"
fi
