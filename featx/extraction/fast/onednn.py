"""CPU linear layers through oneDNN with weights reordered once ("prepacked").

Why: PyTorch's CPU ``nn.Linear`` in float32 calls MKL's sgemm, which on some CPUs (AMD EPYC here)
runs far below the machine's AVX-512 rate; oneDNN reaches about twice that, and with the weight
reordered once up front it skips a per-call reorder in bfloat16 too. Results are the same linear
map up to float rounding (about 1e-6 relative in float32). BENCHMARKS.md, "Base-sized encoders against
OpenVINO", has the ``FEATX_ONEDNN=0`` on/off timings.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Set as AbstractSet
from functools import cache

import torch

BATCH_HINT = 4096  # rows (batch x tokens) the packed layout is tuned for; any row count works
# The smallest weight (in x out elements) a run packs by default: a 128 x 128 linear, the smallest of a real
# pretrained encoder (BERT-tiny's). Below it, packing (about 0.3-5 ms a linear) and oneDNN's kernel for each new
# batch shape (about 8 ms the first time) cost more than the products save: a 12-row extraction with a 2-layer,
# 32-wide random BERT took 257 ms packed and 217 ms plain, and on 300-1,000 rows the two were within noise.
# FEATX_ONEDNN=1 packs every linear whatever its size; FEATX_ONEDNN=0 packs none.
MIN_PACKED_ELEMENTS = 128 * 128


_HALF_CHECKS = {torch.bfloat16: "_is_mkldnn_bf16_supported", torch.float16: "_is_mkldnn_fp16_supported"}


def half_instructions(dtype: torch.dtype) -> bool:
    """Whether this CPU has the instructions oneDNN's ``dtype`` path needs (bfloat16: AVX-512 BW/VL/DQ or
    AVX-NE-CONVERT; float16: AVX-512 FP16 or AMX-FP16), whatever ``FEATX_ONEDNN`` says."""
    check = getattr(getattr(torch.ops, "mkldnn", None), _HALF_CHECKS.get(dtype, ""), None)
    return check is not None and bool(check())


def min_packed_elements() -> int:
    """The smallest weight (elements) a run packs: ``MIN_PACKED_ELEMENTS``, or 0 where ``FEATX_ONEDNN=1`` asks
    for every linear (the parity tests run tiny models through the packed path that way)."""
    return 0 if os.environ.get("FEATX_ONEDNN") == "1" else MIN_PACKED_ELEMENTS


def available(dtype: torch.dtype = torch.float32) -> bool:
    """Whether oneDNN's prepacked linears run here in ``dtype``: the ops exist in this torch build, and for
    bfloat16 the CPU has the instructions oneDNN's bfloat16 path needs (``half_instructions``: an AVX2-only
    CPU has none, and its linears stay plain)."""
    mkldnn = getattr(torch.ops, "mkldnn", None)
    ops = (
        torch.backends.mkldnn.is_available()
        and os.environ.get("FEATX_ONEDNN", "1") != "0"
        and hasattr(mkldnn, "_linear_pointwise")
        and hasattr(mkldnn, "_reorder_linear_weight")
    )
    if not ops or dtype == torch.float32:
        return bool(ops)
    return dtype == torch.bfloat16 and half_instructions(dtype)


class PackedLinear(torch.nn.Module):
    """``nn.Linear`` (optionally followed by exact GELU) as one oneDNN call with a prepacked weight."""

    def __init__(self, linear: torch.nn.Linear, gelu: bool = False):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # Plain attributes, not parameters: the packed weight is an opaque oneDNN tensor.
        self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), BATCH_HINT)
        self.bias = None if linear.bias is None else linear.bias.detach()
        self.attr, self.algorithm = ("gelu", "none") if gelu else ("none", "")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, self.attr, [], self.algorithm)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, fused={self.attr}"


def _is_exact_gelu(module) -> bool:
    act = getattr(module, "act", None)
    return type(module).__name__ == "GELUActivation" and act is torch.nn.functional.gelu


@cache
def _forward_source(cls: type) -> str | None:
    forward = getattr(cls, "forward", None)
    if forward is None:
        return None
    try:
        return inspect.getsource(forward)
    except (OSError, TypeError):
        return None


def _only_called(parent: torch.nn.Module, child: str) -> bool:
    """Whether ``parent``'s own forward uses its child ``child`` only by calling it.

    A ``PackedLinear`` has no ``weight``: T5's feed-forward, for one, reads ``self.wo.weight.dtype``, and
    other code may read ``.weight``/``.bias`` too. Such a layer (or one whose parent's source cannot be
    read) is left as it is; the rest of the model is still packed.
    """
    cls: type = type(parent)
    source = _forward_source(cls)
    if source is None:
        return False
    uses = re.findall(rf"\bself\.{re.escape(child)}\b(\s*\()?", source)
    return all(called for called in uses)


def _touches(name: str, keep: AbstractSet[str]) -> bool:
    """Whether module ``name`` is, or holds, a module whose output a hook records."""
    return any(kept == name or kept.startswith(name + ".") for kept in keep)


def prepack_linears(
    model: torch.nn.Module,
    device: torch.device,
    dtype: torch.dtype,
    keep: set[str] | frozenset[str] = frozenset(),
    min_elements: int = 0,
) -> int:
    """Swap the model's ``nn.Linear`` layers for ``PackedLinear`` in place (CPU, fp32/bf16 only).

    BERT-style ``dense`` + exact-GELU blocks become one fused call, except where a module named in
    ``keep`` (hooked by a site) is the ``dense`` or its activation: fusing would move the GELU into
    ``dense`` and the hook would record post-GELU values that the plain model never computes there.
    A linear whose weight has fewer than ``min_elements`` elements stays plain (a run passes
    ``min_packed_elements()``).
    Returns the number of linears swapped; 0 (model untouched) where oneDNN is unavailable or a check fails.
    """
    if device.type != "cpu" or dtype not in (torch.float32, torch.bfloat16) or not available(dtype):
        return 0
    if not any(type(m) is torch.nn.Linear and _big_enough(m, min_elements) for m in model.modules()):
        return 0  # nothing big enough to pack: not even the parity check's kernels
    try:
        _check_parity(dtype)
    except Exception:  # an op missing or misbehaving in this torch build: keep the plain layers
        return 0
    swapped = 0
    for prefix, module in list(model.named_modules()):
        dense, act = getattr(module, "dense", None), getattr(module, "intermediate_act_fn", None)
        where = f"{prefix}." if prefix else ""
        fusable = not (_touches(f"{where}dense", keep) or _touches(f"{where}intermediate_act_fn", keep))
        fusable = fusable and _only_called(module, "dense") and _only_called(module, "intermediate_act_fn")
        fusable = fusable and isinstance(dense, torch.nn.Linear) and _big_enough(dense, min_elements)
        if fusable and act is not None and _is_exact_gelu(act):
            module.dense = PackedLinear(dense, gelu=True)
            module.intermediate_act_fn = torch.nn.Identity()
            swapped += 1
        for name, child in list(module.named_children()):
            packable = type(child) is torch.nn.Linear and _big_enough(child, min_elements)
            if packable and child.weight.dtype == dtype and _only_called(module, name):
                setattr(module, name, PackedLinear(child))
                swapped += 1
    return swapped


def _big_enough(linear: torch.nn.Linear, min_elements: int) -> bool:
    """Whether ``linear``'s weight has at least ``min_elements`` elements (``min_packed_elements``)."""
    return linear.weight.numel() >= min_elements


def _check_parity(dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(24, 40).to(dtype)
    x = torch.randn(3, 5, 24, generator=generator).to(dtype)
    with torch.inference_mode():
        expected = torch.nn.functional.gelu(linear(x)).float()
        got = PackedLinear(linear, gelu=True)(x).float()
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    if got.shape != expected.shape or not torch.allclose(got, expected, atol=tolerance, rtol=tolerance):
        raise RuntimeError("oneDNN linear disagrees with nn.Linear")
