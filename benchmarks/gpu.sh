#!/usr/bin/env bash
# The GPU profile (--profile gpu) in chunks that each end well inside a 10-minute limit, so that
# each can be one remote command; the rows of every chunk are merged into OUT after each one.
#
#   bash benchmarks/gpu.sh OUT CHUNK      CHUNK: 1 .. 7, merge, all (1 .. 7 then merge), list
#
# Chunk N writes OUT/N-NAME/ (rows.jsonl as each row finishes, results.*) and then merges every
# chunk so far into OUT/results.{md,txt,json} (and chart.png when matplotlib imports). A chunk
# stops itself after $DEADLINE seconds (default 420); run it again and it resumes where it
# stopped (--resume). Environment: PYTHON (default python3, run with -P), PYTHONPATH where
# PyShark is installed (the repository is appended), PYOPENCL_CTX to pick the OpenCL device,
# ROW_LIMIT (default: the profile's 90 s), EXTRA (more options for every chunk).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=${1:?usage: bash benchmarks/gpu.sh OUT CHUNK (1..7, merge, all, list)}
CHUNK=${2:?usage: bash benchmarks/gpu.sh OUT CHUNK (1..7, merge, all, list)}
PY=${PYTHON:-python3}
DEADLINE=${DEADLINE:-420}
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$REPO"

names=(
    ""
    "1-streaming --programs saxpy,sum,dot,prefix_sum"
    "2-filter-histogram --programs filter,histogram,max_histogram"
    "3-nbody-matmul --programs nbody,matmul,matmul_2048,matmul_f64,matmul_f64_2048"
    "4-grids --programs mandelbrot,hotspot,pathfinder,kmeans,blackscholes"
    "5-locvolcalib --programs locvolcalib,locvolcalib_outside"
    "6-compile --compile-report-only"
    "7-ports --programs hotspot_rodinia,srad,sgemm,mri_q,crystal,backprop"
)

bench() { "$PY" -P -m benchmarks "$@"; }

merge() {
    local dirs=()
    for d in "$OUT"/[1-9]-*/; do
        [ -e "$d/rows.jsonl" ] && dirs+=("$d")
    done
    if [ ${#dirs[@]} -eq 0 ]; then
        echo "gpu.sh: no chunk has run yet under $OUT" >&2
        return 2
    fi
    bench --merge "${dirs[@]}" --out "$OUT"
}

run_chunk() {
    local spec=${names[$1]}
    local name=${spec%% *} args=${spec#* }
    local limit=()
    [ -n "${ROW_LIMIT:-}" ] && limit=(--row-limit "$ROW_LIMIT")
    echo "== chunk $name ($(date +%H:%M:%S))" >&2
    # shellcheck disable=SC2086  # args and EXTRA are lists of options
    bench --profile gpu $args --resume --deadline "$DEADLINE" --no-chart "${limit[@]}" \
        ${EXTRA:-} --out "$OUT/$name"
    local status=$?
    merge > "$OUT/merge.log" 2>&1 || echo "gpu.sh: the merge failed (see $OUT/merge.log)" >&2
    echo "== chunk $name done (status $status; $(date +%H:%M:%S)); merged: $OUT/results.md" >&2
    return $status
}

case $CHUNK in
    [1-7]) run_chunk "$CHUNK" ;;
    merge) merge ;;
    all)
        status=0
        for c in 1 2 3 4 5 6 7; do run_chunk "$c" || status=1; done
        merge
        exit $status ;;
    list)
        for c in 1 2 3 4 5 6 7; do echo "$c: ${names[$c]}"; done ;;
    *) echo "gpu.sh: unknown chunk $CHUNK (1..7, merge, all, list)" >&2; exit 2 ;;
esac
