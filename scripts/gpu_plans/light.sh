# The light-models plan of scripts/gpu_window.sh (issue 43, item 5): nco's decoders on the
# imported Attention Model at N=100 over all 10,000 Kool test instances (docs/light_models.md):
# on CVRP100 sampling 1280 (Kool et al. report cost 16.23), Gumbeldore 32x4 (sigma 0.3, as the
# TSP100 run) and beam 16, then on TSP100 beam 16 and sampling 1280; all of them finished on the
# CPU by 2026-12-02, so a window decodes only the runs whose merged JSON was deleted. Each decode runs in
# resumable parts (scripts/eval_in_parts.py) inside the checkout, so that a timeout keeps the
# parts already done and the next window continues them (a run whose merged JSON is there,
# done on the CPU since, decodes nothing); every file the window wrote there
# comes back as OUT_DIR/light.tgz: untar it in the checkout, delete the committed `.parts/` of
# runs it merged (the tarball cannot carry their removal) and commit. NCO_DEVICE (default
# cuda), NCO_EVAL_LIMIT (first instances only) and NCO_LIGHT_DIR (default data/results/light)
# allow a small CPU rehearsal. Sourced by gpu_window.sh (step, pack_new, left, $PY, $OUT).
# shellcheck shell=bash disable=SC2154
DEV=${NCO_DEVICE:-cuda}
DIR=${NCO_LIGHT_DIR:-data/results/light}

# decode NAME MAX_S CHECKPOINT DATA CHUNK OUT_NAME OVERRIDES...: one all-instances run in parts
decode() {
    local name=$1 limit=$2 checkpoint=$3 data=$4 chunk=$5 out=$6
    shift 6
    step "$name" "$limit" "$PY" scripts/eval_in_parts.py --checkpoint "$checkpoint" \
        --data "$data" --chunk "$chunk" ${NCO_EVAL_LIMIT:+--limit "$NCO_EVAL_LIMIT"} \
        --out "$DIR/$out" -- "$@" "device=$DEV" progress=false
}

decode cvrp100_sample1280 150 shipped:am_cvrp100 kool:cvrp100_test 1000 \
    am_cvrp100_sample1280_all.json search=sample search.num_samples=1280 batch_size=50
decode cvrp100_gd32x4 150 shipped:am_cvrp100 kool:cvrp100_test 1000 \
    am_cvrp100_gd32x4_all.json search=gumbeldore search.beam_width=32 search.rounds=4 \
    search.sigma=0.3 search.p_min=1.0 batch_size=250
decode cvrp100_beam16 60 shipped:am_cvrp100 kool:cvrp100_test 2500 \
    am_cvrp100_beam16_all.json search=beam batch_size=500
decode tsp100_beam16 60 shipped:am_tsp100 kool:tsp100_test 2500 \
    am_tsp100_beam16_all.json search=beam batch_size=500
decode tsp100_sample1280 "$(($(left) - 40))" shipped:am_tsp100 kool:tsp100_test 500 \
    am_tsp100_sample1280_all.json search=sample search.num_samples=1280 batch_size=50
pack_new snapshot "$DIR" light.tgz
