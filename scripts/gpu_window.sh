#!/usr/bin/env bash
# A GPU window in one command (docs/gpu.md): install nco if .venv is absent (offline from the
# wheels in .whl when scripts/device_prep.sh put them there), show the GPU, then run a plan's
# steps (scripts/gpu_plans/PLAN.sh; default `bench`: the search, policy and training benchmarks
# and a short JSSP training probe), each under a timeout cut from the budget left and each
# writing into OUT_DIR; a failed step does not stop the next. Everything printed also goes to
# OUT_DIR/window.log.
#
#   bash scripts/gpu_window.sh [--dry-run] OUT_DIR BUDGET_S [PLAN]
#
# --dry-run prints the steps with their timeouts, as if each ran until its timeout, and runs
# nothing (no GPU needed).
# Exit status: 0 all steps ran and passed, 1 a step failed, 2 bad arguments, 3 no CUDA GPU,
# 4 the installation failed. NCO_PROBE_EPOCHS (default 2) sets the training probe's epochs.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

DRY=0
if [ "${1:-}" = "--dry-run" ]; then
    DRY=1
    shift
fi
if [ $# -lt 2 ] || [ $# -gt 3 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 [--dry-run] OUT_DIR BUDGET_S [PLAN]" >&2
    exit 2
fi
PLAN=scripts/gpu_plans/${3:-bench}.sh
if [ ! -f "$PLAN" ]; then
    echo "$0: no plan $PLAN (plans: $(cd scripts/gpu_plans && ls -- *.sh | sed 's/\.sh$//' | xargs))" >&2
    exit 2
fi
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
BUDGET=$2
LOG=$OUT/window.log
RESERVE=20 # seconds kept at the end for the caller to collect OUT_DIR
FAILED=0
SPENT=0 # --dry-run: the seconds the steps would have taken at most
PY=.venv/bin/python
export PYTHONUNBUFFERED=1

# seconds left; a dry run's clock is only SPENT, so that its timeouts do not depend on how
# fast it ran
left() { echo $((BUDGET - (DRY ? 0 : SECONDS) - SPENT - RESERVE)); }
say() { echo "[gpu_window +${SECONDS}s, $(left)s left] $*" | tee -a "$LOG"; }

# step NAME MAX_S CMD...: run CMD under a timeout of MAX_S seconds or the budget left, if less;
# skipped when under 30 s are left.
step() {
    local name=$1 limit=$2
    shift 2
    local t
    t=$(left)
    if ((t > limit)); then t=$limit; fi
    if ((t < 30)); then
        say "skip $name: too little budget left"
        return
    fi
    say "start $name (timeout ${t}s): $*"
    if ((DRY)); then
        SPENT=$((SPENT + t))
        return
    fi
    timeout --kill-after=10 "$t" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    if ((rc == 0)); then
        say "done $name"
    else
        FAILED=1
        say "FAILED $name: exit $rc$( ((rc == 124)) && echo ' (timed out)')"
    fi
}

# pack_new NAME DIR TARBALL: a step that packs every file under DIR written since the plan began
# into OUT_DIR/TARBALL (plans that decode in resumable parts inside the checkout).
pack_new() {
    # shellcheck disable=SC2016
    step "$1" 30 bash -c 'find "$1" -type f -newer "$2" -print0 | tar czf "$3" --null -T -' \
        _ "$2" "$OUT/.plan_start" "$OUT/$3"
}

if ((!DRY)); then
    if ! nvidia-smi >/dev/null 2>&1; then
        say "no CUDA GPU here (nvidia-smi is missing or fails): nothing run"
        exit 3
    fi
    if [ ! -x "$PY" ] && [ -d .whl ]; then
        # An offline GPU image (python3 with CUDA torch and Lightning): the wheels that
        # scripts/device_prep.sh put in .whl go to /tmp/site, and nco runs from this checkout.
        say "no .venv: installing the carried wheels (.whl) into /tmp/site"
        python3 -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir \
            --upgrade --target /tmp/site .whl/*.whl 2>&1 | tee -a "$LOG"
        [ "${PIPESTATUS[0]}" -eq 0 ] || exit 4
        export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
        python3 -c "import hydra, lightning, nco.cli.train" 2>&1 | tee -a "$LOG"
        [ "${PIPESTATUS[0]}" -eq 0 ] || exit 4
        PY=python3
    elif [ ! -x "$PY" ]; then
        # A system python3 with a CUDA torch (a GPU image) lends it to the venv; otherwise pip
        # fetches torch, whose default build on Linux is a CUDA one. install.sh keeps that torch.
        if python3 -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
            say "no .venv: creating one on the system's CUDA torch"
            python3 -m venv --system-site-packages .venv || exit 4
        else
            say "no .venv: creating one with torch from the default index"
            { python3 -m venv .venv && "$PY" -m pip install --quiet torch; } || exit 4
        fi
        bash scripts/install.sh 2>&1 | tee -a "$LOG"
        if [ "${PIPESTATUS[0]}" -ne 0 ]; then
            say "scripts/install.sh failed"
            exit 4
        fi
    fi
    nvidia-smi 2>&1 | tee -a "$LOG"
    if ! "$PY" -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" \
        2>&1 | tee -a "$LOG" || [ "${PIPESTATUS[0]}" -ne 0 ]; then
        say ".venv's torch sees no CUDA GPU (a CPU build?): install a CUDA torch into .venv"
        exit 3
    fi
fi

touch "$OUT/.plan_start" # what pack_new packs is newer than this
# shellcheck source=/dev/null
source "$PLAN"
if ((DRY)); then
    say "dry run: nothing was run"
else
    say "finished: $( ((FAILED)) && echo 'a step failed' || echo 'all steps passed')"
fi
exit "$FAILED"
