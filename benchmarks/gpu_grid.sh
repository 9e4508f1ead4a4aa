#!/bin/bash
# A preset's grid, or a few cells of several presets, on a lent GPU within one device call (docs/gpu.md, sections 5
# and 7).
#
#   bash benchmarks/gpu_grid.sh prepare   # here: Fashion-MNIST and the cached stages 0-2 of runs/$PRESET into .gpu-cache/
#   bash benchmarks/gpu_grid.sh run       # on the device (carry .gpu-cache): the gpu tests, then the grid until DEADLINE
#   bash benchmarks/gpu_grid.sh cells     # on the device: the gpu tests and the CELLS of several presets side by side
#
# Settings (environment): PRESET (standard), BITS ("16 32 64": one pipeline per length, in order), SEEDS ("0 1 2"),
# METHODS (the preset's; the pipeline starts the longest budgets first), JOBS (12: runs sharing the GPU), DEADLINE
# (520 s after the start: the runs then stop and restart later), CODES (the classifier-code rules after each length's
# grid: "none", or "top1 soft", which needs stage 1's classifier in the cache), DATA
# (/usr/share/datasets/fashion-mnist). What comes back ($OUT):
# env.txt, gpu_tests.log, grid-<bits>.log and gpu-runs.tgz (every run folder without checkpoints). Untar it into
# runs/<preset>-<gpu> (a run's identity does not name its device: keep a device's runs apart) and read it with
# `python -m shc.results --run-dir ...`, or write a results file with `--write-csv`.
# CELLS (for `cells`): "preset:bits:seeds:methods;..." (e.g. "standard:16:0 1 2:lth;standard-unseen:16:0:lth"),
# each entry one pipeline into .gpu-cache/runs/<preset>, all started at once (each with as many jobs as its runs)
# and stopped at DEADLINE (DEVICE: cuda; cpu for a dry run here). It leaves env.txt, gpu_tests.log,
# cells-<i>-<preset>-<bits>.log and gpu-runs.tgz (every preset named). `prepare` copies one PRESET: run it per preset.
set -u
PRESET=${PRESET:-standard}; BITS=${BITS:-"16 32 64"}; SEEDS=${SEEDS:-"0 1 2"}; JOBS=${JOBS:-12}
CACHE=.gpu-cache
case "${1:-}" in
prepare)
    grep -qx "/$CACHE/" .git/info/exclude 2>/dev/null || echo "/$CACHE/" >> .git/info/exclude
    mkdir -p "$CACHE/data" "$CACHE/runs/$PRESET"
    cp "${DATA:-/usr/share/datasets/fashion-mnist}"/*-ubyte.gz "$CACHE/data/"
    (cd "runs/$PRESET" && find . -maxdepth 3 -type d \( -name 'stage0-*' -o -name 'stage1-*' -o -name 'stage2-*' \) \
        -print0 | xargs -0 -I{} cp -r --parents {} "../../$CACHE/runs/$PRESET/")
    find "$CACHE" -name .lock -delete
    du -sh "$CACHE" ;;
run)
    export PYTHONPATH=$PWD SHC_DATA_ROOT=$PWD/$CACHE/data PYTHONUNBUFFERED=1
    OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
    T_END=$(( $(date +%s) + ${DEADLINE:-520} ))
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; git log -1 --format=%H
      python3 -c "import sys, torch; print(sys.version, torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
    python3 -m pytest tests/test_gpu.py -m gpu -v -p no:cacheprovider > "$OUT/gpu_tests.log" 2>&1 &
    for bits in $BITS; do
        left=$(( T_END - $(date +%s) )); [ "$left" -gt 60 ] || break
        timeout -s TERM "$left" python3 -m shc.pipeline --preset "$PRESET" ${METHODS:+--methods $METHODS} \
            --bits "$bits" --seeds $SEEDS --device cuda --jobs "$JOBS" --quiet --classifier-codes ${CODES:-none} \
            --run-dir "$CACHE/runs/$PRESET" > "$OUT/grid-$bits.log" 2>&1
    done
    wait
    tar czf "$OUT/gpu-runs.tgz" --exclude='*.pt' --exclude='.lock' -C "$CACHE/runs" "$PRESET"
    ls -la "$OUT" ;;
cells)
    IFS=';' read -ra entries <<< "${CELLS:?CELLS is empty: give preset:bits:seeds:methods entries, ;-separated}"
    export PYTHONPATH=$PWD SHC_DATA_ROOT=$PWD/$CACHE/data PYTHONUNBUFFERED=1
    OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; git log -1 --format=%H
      python3 -c "import sys, torch; print(sys.version, torch.__version__, torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
    python3 -m pytest tests/test_gpu.py -m gpu -v -p no:cacheprovider > "$OUT/gpu_tests.log" 2>&1 &
    presets=(); i=0
    for entry in "${entries[@]}"; do
        IFS=':' read -r preset bits seeds methods <<< "$entry"
        runs=$(( $(wc -w <<< "$seeds") * $(wc -w <<< "$methods") )); i=$((i + 1)); presets+=("$preset")
        timeout -s TERM "${DEADLINE:-520}" python3 -m shc.pipeline --preset "$preset" --methods $methods \
            --bits "$bits" --seeds $seeds --device "${DEVICE:-cuda}" --jobs "$runs" --quiet --classifier-codes none \
            --run-dir "$CACHE/runs/$preset" > "$OUT/cells-$i-$preset-$bits.log" 2>&1 &
    done
    wait
    tar czf "$OUT/gpu-runs.tgz" --exclude='*.pt' --exclude='.lock' -C "$CACHE/runs" \
        $(printf '%s\n' "${presets[@]}" | sort -u)
    ls -la "$OUT" ;;
*)
    echo "usage: bash benchmarks/gpu_grid.sh prepare|run|cells (settings: see the top of this file)" >&2; exit 2 ;;
esac
