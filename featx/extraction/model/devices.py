"""Where the encoder runs and in which precision: ``--device`` and ``--dtype`` resolved for torch."""

from __future__ import annotations

import torch

from ...errors import InputError
from ..fast import onednn


def resolve_device(device: str = "auto") -> torch.device:
    device = (device or "auto").lower()
    if device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"--device {device}: no CUDA GPU is available here", "use --device cpu or auto")
        resolved = torch.device(device)
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise InputError(f"--device {device}: only {torch.cuda.device_count()} GPU(s) present")
        return resolved
    if device == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise InputError("--device mps: Apple MPS is not available here", "use --device cpu or auto")
        return torch.device("mps")
    if device == "cpu":
        return torch.device("cpu")
    raise InputError(f"--device '{device}' is not understood", "use auto, cpu, cuda, cuda:N or mps")


_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
}


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    dtype = (dtype or "auto").lower()
    if dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        if device.type == "cuda":
            return torch.float16
        return torch.float32
    if dtype not in _DTYPES:
        raise InputError(f"--dtype '{dtype}' is not understood", "use auto, float32, float16 or bfloat16")
    return _DTYPES[dtype]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def slow_precision(dtype: torch.dtype, device: torch.device) -> str | None:
    """Why ``dtype`` on ``device`` runs slower than float32, or None: a CPU without bfloat16 (or float16)
    instructions computes half precision by converting every product (27 Nov 2026, MiniLM on an AVX2-only
    AMD EPYC, 500 rows: 3.8x slower than float32 in both)."""
    if device.type != "cpu" or dtype not in (torch.bfloat16, torch.float16) or onednn.half_instructions(dtype):
        return None
    name = dtype_name(dtype)
    needs = "AVX-512 BF16, AMX or AVX-NE-CONVERT" if dtype == torch.bfloat16 else "AVX-512 FP16 or AMX-FP16"
    return (
        f"--dtype {name}: this CPU ({torch.backends.cpu.get_cpu_capability()}) has no {name} instructions "
        f"({needs}), so {name} runs slower than float32 here; --dtype float32 is faster and exact"
    )
