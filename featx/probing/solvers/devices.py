"""Where featx's logistic probes are solved: ``featx probe --device``.

``auto`` (the default) solves them with torch on a CUDA GPU when torch sees one, else with featx's numpy
solver on the CPU (``softmax.py``); ``cpu`` always the numpy solver; ``cuda`` or ``cuda:N`` the torch
solver (``softmax_torch.py``) on that GPU. Only the solver moves: features are read, standardised and
split into folds on the CPU as always, and the other probes (svm, mlp, attn, ridge) stay there.

A probing run resolves the choice once (``resolve_device``) and runs every job under
``solver_device(device)``; ``softmax.solve`` asks ``current_device()``. Torch is imported only where a
GPU may be: ``auto`` first looks for the NVIDIA driver, so a CPU machine's probe start-up is unchanged.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar

from ...checks import parse_whole
from ...errors import InputError
from ...options import spoken, spoken_value

CHOICES = "auto, cpu, cuda or cuda:N"
_CURRENT: ContextVar[str | None] = ContextVar("featx_solver_device", default=None)


def parse_device(device) -> str:
    """``device`` normalised to auto, cpu, cuda or cuda:N; an InputError for anything else."""
    text = "auto" if device is None else str(device).strip().lower()
    kind, _, index = text.partition(":")
    if text in ("auto", "cpu", "cuda") or (kind == "cuda" and parse_whole(index) is not None):
        return text
    raise InputError(f"{_device(device, repr(str(device)))} is not understood", f"use {CHOICES}")


def _device(value: object, shown: str | None = None) -> str:
    """``--device cuda`` on the command line, ``device='cuda'`` from Python (``options.spoken_value``)."""
    return spoken_value(None, "device", value, "--device", shown=shown)


def check_device(device) -> str:
    """``parse_device``, and for a GPU asked for by name, that torch sees it (a clear InputError if not)."""
    text = parse_device(device)
    if text.startswith("cuda"):
        _require_gpu(text)
    return text


def _require_gpu(text: str) -> None:
    import torch

    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
        raise InputError(
            f"{_device(text)}: torch sees no CUDA GPU here (torch {torch.__version__}, {build})",
            f"leave {spoken(None, 'device', '--device')} out (auto) or give "
            f"{_device('cpu')} to probe on the CPU; for a GPU, run on a "
            "machine with an NVIDIA GPU and driver and a CUDA build of torch",
        )
    count = torch.cuda.device_count()
    index = int(text.partition(":")[2] or 0)
    if index >= count:
        raise InputError(
            f"{_device(text)}: torch sees {count} GPU(s) here, cuda:0 to cuda:{count - 1}",
            f"give {_device('cuda')} (the current GPU) or a cuda:N that exists",
        )


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU; torch is imported only when an NVIDIA driver may be there."""
    if "torch" not in sys.modules and not driver_present():
        return False
    import torch

    return torch.cuda.is_available()


def driver_present() -> bool:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False  # every GPU hidden
    if sys.platform.startswith("linux"):  # the driver's files, or WSL's GPU bridge
        return any(os.path.exists(path) for path in ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg"))
    return sys.platform != "darwin"  # no CUDA on macOS; elsewhere torch is asked


def resolve_device(device) -> str | None:
    """The torch device the logistic probes are solved on, e.g. ``cuda:0``; None: numpy on the CPU."""
    text = check_device(device)
    if text == "cpu" or (text == "auto" and not cuda_available()):
        return None
    import torch

    index = torch.device("cuda" if text == "auto" else text).index
    return f"cuda:{torch.cuda.current_device() if index is None else index}"


@contextmanager
def solver_device(device: str | None):
    """Solve the logistic probes fitted inside this block on ``device`` (None: numpy on the CPU)."""
    token = _CURRENT.set(device)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_device() -> str | None:
    return _CURRENT.get()


def solver_meta(device: str | None) -> dict:
    """The results meta's record of where the logistic probes were solved."""
    if device is None:
        return {"solver": "numpy", "solver_device": "cpu"}
    meta = {"solver": "torch", "solver_device": device}
    if device.startswith("cuda"):
        import torch

        meta["solver_gpu"] = torch.cuda.get_device_name(device)
    return meta
