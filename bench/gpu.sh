#!/usr/bin/env bash
# One-command GPU benchmark (bench/gpu.py): featx vs sentence-transformers, fp16/bf16, with and without torch.compile;
# then the logistic probe solver on the GPU against the numpy one on the CPU (bench/solver_gpu.py).
#
# Once, on the CPU machine (needs the packaged MiniLM and ../shared/data; writes bench/.gpu/, ~45 MB, gitignored):
#     PYTHONPATH=$PWD .venv/bin/python bench/gpu.py prepare
# On the GPU machine (the device tool: carry ["bench/.gpu"], plus ".whl" if wheels are needed there):
#     bash bench/gpu.sh                 # tables in $OUT/gpu-table.md and solver-table.md (or bench/.gpu/out/), JSON beside them
#     bash bench/gpu.sh --quick         # extra arguments go to bench/gpu.py run
# The GPU image has torch, transformers, sentence-transformers, h5py, click and scikit-learn; featx itself
# travels as the working tree. Wheels in .whl/ (if any) are installed first, without network.
set -euo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || true
"$PY" bench/gpu.py run --device "${FEATX_GPU_DEVICE:-cuda}" --out "${OUT:-bench/.gpu/out}" "$@"
"$PY" bench/solver_gpu.py --device "${FEATX_GPU_DEVICE:-cuda}" --out "${OUT:-bench/.gpu/out}"
