#!/usr/bin/env bash
# One-command GPU benchmark. Usage:
#     bash bench/gpu.sh [OUT_DIR] [--smoke] [more arguments for bench/gpu.py run]
# OUT_DIR: where the results go (default $OUT, else bench/.gpu/out): gpu-table.md/gpu.json (bench/gpu.py:
# extraction at MiniLM and bert-base shapes, fp16/bf16, tokens/s and share of the bf16 matmul rate, against
# sentence-transformers), solver-table.md/solver.json (bench/solver_gpu.py: the torch logistic solver against
# the numpy one), decoder-table.md/decoder.json (bench/decoder.py: a seeded random ~1B Llama built in place,
# bf16, with a prompt template: tokens/s, peak GPU memory, share of the matmul rate, the dry run's
# prediction), predict-table.md/predict.json (bench/predict_gpu.py: featx predict of a sentence probe and of a
# word probe on UD English GUM, or why it was skipped),
# host-table.md/host.json and profile-*.txt (bench/gpu_host.py: featx's batch loop on 20,000 short texts at
# several rows per batch, all outputs or the last layer's mean, against sentence-transformers, with a
# cProfile of one run), loop-table.md/loop.json (bench/gpu_loop.py: the batch loop in bench/gpu.py's own
# process against a fresh one, with a timeline of its phases and the GPU's busy share), probe-table.md/
# probe.json (bench/probe_gpu.py: `featx probe --layer all --pooling all --device cuda` on 2 models x 3
# corpus shapes), and summary.md, all of them one after the other, the lease's questions first.
#
# --smoke (or SMOKE=1): the same steps on the CPU with tiny models and corpora built in place, in about a
# minute, all in one process (bench/gpu_smoke.py; tests/bench/test_gpu_smoke.py runs it; no timing means
# anything there).
#
# Once, on the CPU machine (needs the packaged MiniLM and ../shared/data; writes bench/.gpu/, ~51 MB, gitignored):
#     PYTHONPATH=$PWD .venv/bin/python bench/gpu.py prepare
# On the GPU machine (the device tool: carry ["bench/.gpu"], plus ".whl" if wheels are needed there):
#     bash bench/gpu.sh "$OUT"
#     bash bench/gpu.sh "$OUT" --quick     # extra arguments go to bench/gpu.py run
#     bash bench/gpu.sh "$OUT" --no-compile   # the extraction step without its compile rows, which need longer
# The GPU image has torch, transformers, sentence-transformers, h5py, click and scikit-learn; featx itself
# travels as the working tree. Wheels in .whl/ (if any) are installed first, without network.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-bench/.gpu/out}
if [[ $# -gt 0 && $1 != -* ]]; then
    OUT_DIR=$1
    shift
fi
SMOKE=${SMOKE:-0}
ARGS=()
for arg in "$@"; do
    if [[ $arg == --smoke ]]; then SMOKE=1; else ARGS+=("$arg"); fi
done
mkdir -p "$OUT_DIR"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
DEVICE=${FEATX_GPU_DEVICE:-cuda}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "nvidia-smi: no NVIDIA GPU here"
if [[ $SMOKE == 1 ]]; then
    DEVICE=cpu
    "$PY" bench/gpu_smoke.py --out "$OUT_DIR" ${ARGS[@]+"${ARGS[@]}"}  # every step below, in one process
else
    # Each step is time-boxed (seconds: STEP_SECONDS="loop gpu probe host solver decoder predict", in the order
    # run, the lease's open questions first) and no step runs past TOTAL_SECONDS (default 560) from here, so the
    # whole script fits 10 minutes of a 15-minute lease by construction, the machine's start-up left over; a
    # step cut short or failing is reported in its table's place and the next one runs; 0 skips a step. On an
    # H200 on 27 Nov 2026, --no-compile: gpu about 110 s, solver > 70 s (cut), decoder 60 s, predict 10 s;
    # bench/gpu_host.py on an H100 the same day: 200 s (here cut at its box: the loop step answers its question).
    read -r T_LOOP T_GPU T_PROBE T_HOST T_SOLVER T_DECODER T_PREDICT <<< "${STEP_SECONDS:-90 150 110 70 50 50 40}"
    DEADLINE=$((SECONDS + ${TOTAL_SECONDS:-560}))
    step() {  # step SECONDS TABLE COMMAND...: run, and on a cut or a failure say so where the table goes
        local seconds=$1 name=$2 rc=0
        shift 2
        local left=$((DEADLINE - SECONDS))
        if (( seconds > left )); then seconds=$(( left > 0 ? left : 0 )); fi
        if [[ $seconds == 0 ]]; then
            echo "(skipped: no time left for it, or STEP_SECONDS gave it 0 s)" > "$OUT_DIR/$name-table.md"
            return
        fi
        timeout "$seconds" "$@" || rc=$?
        if [[ $rc -ne 0 ]]; then
            echo "step $name: exit $rc$([[ $rc -eq 124 ]] && echo ", cut at $seconds s")" | tee -a "$OUT_DIR/steps.log"
            [[ -s "$OUT_DIR/$name-table.md" ]] || echo "(no table: exit $rc)" > "$OUT_DIR/$name-table.md"
        fi
    }
    step "$T_LOOP" loop "$PY" bench/gpu_loop.py --device "$DEVICE" --out "$OUT_DIR"
    step "$T_GPU" gpu "$PY" bench/gpu.py run --device "$DEVICE" --out "$OUT_DIR" ${ARGS[@]+"${ARGS[@]}"}
    step "$T_PROBE" probe "$PY" bench/probe_gpu.py --device "$DEVICE" --budget $((T_PROBE - 15)) --out "$OUT_DIR"
    step "$T_HOST" host "$PY" bench/gpu_host.py --device "$DEVICE" --batches 16384 --profile --out "$OUT_DIR"
    step "$T_SOLVER" solver "$PY" bench/solver_gpu.py --device "$DEVICE" --probe-timeout 60 --out "$OUT_DIR"
    step "$T_DECODER" decoder "$PY" bench/decoder.py --device "$DEVICE" --out "$OUT_DIR"
    step "$T_PREDICT" predict "$PY" bench/predict_gpu.py --device "$DEVICE" --out "$OUT_DIR"
fi
{
    echo "# bench/gpu.sh on $DEVICE$([[ $SMOKE == 1 ]] && echo ' (smoke: tiny shapes, timings mean nothing)'), $(date -u +%FT%TZ)"
    for table in loop gpu probe host solver decoder predict; do
        echo
        echo "## $table"
        echo
        cat "$OUT_DIR/$table-table.md"
    done
} > "$OUT_DIR/summary.md"
echo "results in $OUT_DIR (summary.md)"
