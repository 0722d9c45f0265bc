#!/usr/bin/env bash
# Get a checkout ready for a GPU window of the device tool (docs/gpu.md), which sends the
# working tree (tracked and untracked-not-ignored files, at most 64 MiB with the carried paths)
# to an offline machine whose python3 (3.12) has a CUDA torch and Lightning but no Hydra.
#
#   bash scripts/device_prep.sh wheels [--solvers]  # .whl/: wheels nco needs there
#   bash scripts/device_prep.sh slim                # untrack the study artifacts (kept on disk)
#   bash scripts/device_prep.sh restore             # track them again (run right after the window)
#   bash scripts/device_prep.sh size                # MiB the tool would send, carried paths apart
#
# `wheels` fetches hydra-core, omegaconf and antlr4 (built here: it has no wheel), with
# --solvers also LKH-3 (elkai), OR-Tools, PyVRP and vrplib, pinned to this checkout's .venv
# versions. `slim` takes the study folders out of git's index and ignores them (they stay on
# disk and in HEAD), since they alone are hundreds of MB; while slim, a pre-commit hook refuses
# commits, which would otherwise delete them. Exit status: 0 done, 1 failed, 2 bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

SLIM=(data/reproduction data/results data/light)
WHEELS=.whl
MARK=.git/nco-device-slim
HOOK=.git/hooks/pre-commit
LIMIT_MIB=64

version() {
    # The version of package $1 in .venv (else installed for python3), for pinning the wheels.
    local py=.venv/bin/python
    [ -x "$py" ] || py=python3
    "$py" -c "import importlib.metadata as m; print(m.version('$1'))"
}

fetch() {
    # Download binary wheels for CPython 3.12 on manylinux x86-64, without their dependencies.
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$WHEELS" "$@"
}

sent_bytes() {
    # Bytes of the files the device tool sends: tracked (present) and untracked-not-ignored.
    git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
        | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1
}

mib() { echo $(($1 / 1048576)); }

case "${1:-}" in
wheels)
    mkdir -p "$WHEELS"
    grep -qxF "/$WHEELS/" .git/info/exclude 2>/dev/null || echo "/$WHEELS/" >>.git/info/exclude
    fetch "hydra-core==$(version hydra-core)" "omegaconf==$(version omegaconf)"
    python3 -m pip wheel --quiet --no-deps -w "$WHEELS" \
        "antlr4-python3-runtime==$(version antlr4-python3-runtime)"
    if [ "${2:-}" = "--solvers" ]; then
        fetch "elkai==$(version elkai)" "ortools==$(version ortools)" \
            "protobuf==$(version protobuf)" "immutabledict==$(version immutabledict)" \
            "pyvrp==$(version pyvrp)" "vrplib==$(version vrplib)"
    elif [ -n "${2:-}" ]; then
        echo "usage: $0 wheels [--solvers]" >&2
        exit 2
    fi
    ls -1 "$WHEELS"
    echo "$WHEELS: $(mib "$(du -cb "$WHEELS"/*.whl | tail -1 | cut -f1)") MiB"
    ;;
slim)
    if [ -e "$HOOK" ] && [ ! -f "$MARK" ]; then
        echo "slim: $HOOK exists; move it aside first (slim installs its own)" >&2
        exit 1
    fi
    git rm -r -q --cached --ignore-unmatch -- "${SLIM[@]}"
    for p in "${SLIM[@]}"; do
        grep -qxF "/$p/" .git/info/exclude || echo "/$p/" >>.git/info/exclude
    done
    printf '%s\n' "${SLIM[@]}" >"$MARK"
    mkdir -p "$(dirname "$HOOK")"
    printf '#!/bin/sh\necho "device_prep.sh slim is on: run bash scripts/device_prep.sh restore" >&2\nexit 1\n' >"$HOOK"
    chmod +x "$HOOK"
    echo "slim: ${SLIM[*]} untracked for the device tool (restore with: $0 restore)"
    echo "sent: $(mib "$(sent_bytes)") MiB (limit $LIMIT_MIB with the carried paths)"
    ;;
restore)
    if [ ! -f "$MARK" ]; then
        echo "restore: not slim, nothing to do"
        exit 0
    fi
    git reset -q -- "${SLIM[@]}"
    for p in "${SLIM[@]}"; do
        grep -vxF "/$p/" .git/info/exclude >.git/info/exclude.tmp || true
        mv .git/info/exclude.tmp .git/info/exclude
    done
    rm -f "$MARK" "$HOOK"
    echo "restore: ${SLIM[*]} tracked again"
    ;;
size)
    sent=$(sent_bytes)
    echo "sent: $(mib "$sent") MiB of tracked and untracked-not-ignored files (limit $LIMIT_MIB)"
    [ -d "$WHEELS" ] && echo "carry $WHEELS: $(mib "$(du -cb "$WHEELS" | tail -1 | cut -f1)") MiB"
    [ "$sent" -le $((LIMIT_MIB * 1048576)) ] || {
        echo "over the limit: run $0 slim first" >&2
        exit 1
    }
    ;;
*)
    echo "usage: $0 wheels [--solvers] | slim | restore | size" >&2
    exit 2
    ;;
esac
