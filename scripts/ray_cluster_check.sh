#!/usr/bin/env bash
# A two-node Ray cluster on this machine (127.0.0.1 only), nco-train sampling on it, and faults.
#
#   scripts/ray_cluster_check.sh [LOG]     # default log: data/results/cluster/ray_cluster_check.log
#
# 1. `ray start --head` (2 CPUs) and a second node (`ray start --address=...`, 2 CPUs and a custom
#    resource node2), each with `--block` in the background so that this script owns its processes.
# 2. The same tiny training run twice: sampling in-process (distributed=local), then on 4 Ray
#    workers (distributed=ray distributed.address=auto, RAY_ADDRESS pointing at the head); 4
#    one-CPU workers need both nodes. During the Ray run: kill -9 one sampling actor in epoch 1's
#    sampling; in epoch 2's sampling the second node dies (kill -9 of its raylet, actors and all).
# 3. Checks: the Ray run sampled on 2 nodes, logged the replaced worker, finished every epoch on
#    the head alone after the node left, and its validation results and best.pt weights equal
#    the in-process run's bit for bit (so every instance was sampled exactly once, with its seed).
# Both nodes are stopped (their `ray start --block` processes, then anything left of theirs) and
# the temp dir removed on exit, failure included.
# Ray's servers listen on every interface (hard-coded in Ray 2.x), so the script re-runs itself in
# a private network namespace (`unshare -n`) holding only the loopback device: nothing outside
# this machine, or outside the script, can reach the cluster. Token authentication (Ray's default
# for `ray start`) uses a fresh token in the temp dir, not ~/.ray.
set -euo pipefail
if [ -z "${NCO_NETNS:-}" ]; then
  exec unshare -n bash -c 'ip link set lo up && NCO_NETNS=1 exec "$0" "$@"' "$0" "$@"
fi
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG=${1:-data/results/cluster/ray_cluster_check.log}
mkdir -p "$(dirname "$LOG")"
exec > >(tee "$LOG") 2>&1
PY=$ROOT/.venv/bin/python
RAY=$ROOT/.venv/bin/ray
export OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore RAY_USAGE_STATS_ENABLED=0
# Ray's memory monitor kills workers when the whole machine's memory is nearly used; on this
# shared machine other jobs fill it, and the sampling actors here need about 0.2 GB each.
export RAY_memory_monitor_refresh_ms=0
WORK=$(mktemp -d /tmp/nco_raycluster.XXXXXX)
"$PY" -c 'import secrets; print(secrets.token_hex(32))' > "$WORK/token"
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=$WORK/token
HEAD_PID="" NODE2_PID=""

descendants() {  # the pids below $1 (children, grandchildren, ...)
  local kids
  kids=$(ps -o pid= --ppid "$1" 2>/dev/null || true)
  for k in $kids; do echo "$k"; descendants "$k"; done
}

stop_node() {  # SIGTERM the node's `ray start --block` (it stops the node), then its leftovers
  local pid=$1 left
  [ -n "$pid" ] || return 0
  left=$(descendants "$pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$pid" $left 2>/dev/null || true
}

cleanup() {
  local rc=$?
  stop_node "$NODE2_PID"
  stop_node "$HEAD_PID"
  rm -rf "$WORK"
  echo "== cleanup done (exit $rc) $(date -u +%FT%TZ)"
}
trap cleanup EXIT
trap "exit 143" TERM INT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
echo "== $(date -u +%FT%TZ) head on 127.0.0.1:$PORT, temp dir $WORK"
"$RAY" start --head --block --node-ip-address=127.0.0.1 --port="$PORT" --num-cpus=2 \
  --num-gpus=0 --include-dashboard=false --temp-dir="$WORK/ray" --disable-usage-stats \
  --object-manager-port="$(free_port)" --node-manager-port="$(free_port)" \
  --ray-client-server-port="$(free_port)" > "$WORK/head.out" 2>&1 &
HEAD_PID=$!
export RAY_ADDRESS=127.0.0.1:$PORT
nodes() { timeout 20 "$RAY" status 2>/dev/null | grep -c "^ 1 node_" || true; }
for _ in $(seq 1 90); do [ "$(nodes)" -ge 1 ] && break; sleep 1; done
[ "$(nodes)" -ge 1 ] || { echo "the head did not come up"; cat "$WORK/head.out"; exit 1; }
"$RAY" start --address="$RAY_ADDRESS" --block --node-ip-address=127.0.0.1 --num-cpus=2 \
  --num-gpus=0 --resources='{"node2": 2}' --disable-usage-stats \
  --object-manager-port="$(free_port)" --node-manager-port="$(free_port)" \
  > "$WORK/node2.out" 2>&1 &
NODE2_PID=$!
for _ in $(seq 1 120); do [ "$(nodes)" -ge 2 ] && break; sleep 1; done
[ "$(nodes)" -ge 2 ] || { echo "no second node"; timeout 20 "$RAY" status; cat "$WORK/node2.out"; exit 1; }
timeout 20 "$RAY" status

TINY=(model=bq_tsp_tiny problem.num_nodes=10 search.beam_width=4 search.rounds=2
  training.instances_per_epoch=2048 training.batches_per_epoch=3 training.lr=0.005 training.batch_size=16
  training.val_instances=8 training.val_batch_size=8 training.val_gap=false
  training.progress=false trainer.max_epochs=4 trainer.accelerator=cpu
  trainer.enable_model_summary=false training.progress_interval_s=600 distributed.chunk_size=16)

echo "== $(date -u +%FT%TZ) in-process run (distributed=local)"
/usr/bin/time -f "%e s wall" "$ROOT/.venv/bin/nco-train" "${TINY[@]}" distributed=local \
  hydra.run.dir="$WORK/local" 2>&1 | grep -E "epoch|wall"

validated() {  # epochs with a validation row so far
  "$PY" -c 'import csv,sys
try: print(sum(1 for r in csv.DictReader(open(sys.argv[1])) if r.get("val/objective")))
except FileNotFoundError: print(0)' "$1"
}
worker_pid() {  # a live SamplingWorker process of the node whose block process is $1
  for p in $(descendants "$1"); do
    if ps -o args= -p "$p" 2>/dev/null | grep -q "SamplingWorker"; then echo "$p"; return; fi
  done
}

echo "== $(date -u +%FT%TZ) Ray run (distributed=ray distributed.address=auto, 4 workers)"
"$ROOT/.venv/bin/nco-train" "${TINY[@]}" distributed=ray distributed.address=auto \
  distributed.workers=4 hydra.run.dir="$WORK/ray_run" > "$WORK/ray_run.out" 2>&1 &
TRAIN_PID=$!
METRICS=$WORK/ray_run/logs/metrics.csv
until [ "$(validated "$METRICS")" -ge 1 ]; do
  kill -0 "$TRAIN_PID" || { cat "$WORK/ray_run.out"; exit 1; }
  sleep 0.1
done
sleep 1  # epoch 1 is sampling now
VICTIM=$(worker_pid "$HEAD_PID")
echo "== $(date -u +%FT%TZ) epoch 1 sampling: kill -9 sampling actor pid $VICTIM (head node)"
kill -9 "$VICTIM"
until [ "$(validated "$METRICS")" -ge 2 ]; do
  kill -0 "$TRAIN_PID" || { cat "$WORK/ray_run.out"; exit 1; }
  sleep 0.1
done
sleep 1  # epoch 2 is sampling now
echo "== $(date -u +%FT%TZ) epoch 2 sampling: the second node dies (kill -9 its processes)"
kill -KILL "$NODE2_PID" $(descendants "$NODE2_PID") 2>/dev/null || true
NODE2_PID=""
wait "$TRAIN_PID" && echo "nco-train (Ray) exit 0" || { cat "$WORK/ray_run.out"; exit 1; }
grep -E "epoch|Ray sampling|resuming" "$WORK/ray_run.out" || true
timeout 20 "$RAY" status | sed -n '1,12p' || true

echo "== $(date -u +%FT%TZ) checks"
"$PY" - "$WORK/local" "$WORK/ray_run" <<'EOF'
import csv
import sys

import torch

from nco import checkpoint

local, remote = sys.argv[1], sys.argv[2]


def epochs(run: str) -> dict[int, dict[str, str]]:
    rows: dict[int, dict[str, str]] = {}
    for r in csv.DictReader(open(f"{run}/logs/metrics.csv")):
        rows.setdefault(int(r["epoch"]), {}).update({k: v for k, v in r.items() if v})
    return rows


a, b = epochs(local), epochs(remote)
print("epoch  nodes  workers_replaced  buffer/size  sample/objective(local|ray)  val/objective")
for e in sorted(b):
    print(
        f"{e:5d}  {b[e].get('sample/nodes', '-'):>5}  {b[e].get('sample/workers_replaced', '-'):>16}"
        f"  {b[e]['buffer/size']:>11}  {a[e]['sample/objective']}|{b[e]['sample/objective']}"
        f"  {b[e]['val/objective']}"
    )
assert sorted(a) == sorted(b) == [0, 1, 2, 3], (sorted(a), sorted(b))
assert float(b[0]["sample/nodes"]) == 2, "epoch 0 did not sample on both nodes"
assert float(b[1]["sample/workers_replaced"]) >= 1, "epoch 1: no worker was replaced"
assert float(b[2]["sample/nodes"]) >= 1 and float(b[3]["sample/nodes"]) == 1, "epoch 3: 2 nodes"
for e in a:
    for key in ("sample/objective", "val/objective", "buffer/size"):
        assert a[e][key] == b[e][key], (e, key, a[e][key], b[e][key])
wa = checkpoint.load(f"{local}/best.pt").policy.state_dict()
wb = checkpoint.load(f"{remote}/best.pt").policy.state_dict()
assert all(torch.equal(wa[k], wb[k]) for k in wa), "best.pt weights differ"
print("OK: 2 nodes sampled; a killed actor was replaced; the run finished on the head after the")
print("second node left; sample and validation objectives and best.pt equal the in-process run")
print("bit for bit.")
EOF
