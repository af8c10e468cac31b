"""CPU fusions of featx's own BERT (``bert.py``) on top of oneDNN's prepacked linears (``onednn.py``).

After ``onednn.prepack_linears`` has packed a native ``BertModel`` for the CPU, ``fuse_bert`` swaps, layer by
layer, its blocks for fused ones computing the same map:

- self-attention: query, key and value as ONE prepacked linear over the three weights concatenated (one
  read of the layer's input, one oneDNN call instead of three); the heads are views of its output;
- each "output" block (after attention, after the feed-forward): the linear and the residual add as one
  oneDNN call (``_linear_pointwise.binary`` with "add"), then the layer norm.

float32 results are the same to rounding (the sums run in another order inside oneDNN); in bfloat16 the
residual add happens before the one rounding to bfloat16 instead of after the linear's, so the values move
by at most a rounding step. Off unless ``FEATX_FUSE=1`` (``requested``): measured on one thread under load,
the two fusions came out within the noise of the unfused model (-5% to +9% by model, dtype and corpus; the
linears themselves are 80-90% of the time), so the default waits for a measurement on a quiet machine
(``bench/native_cpu.py ab``). Only the native path is fused: it records no site but ``hidden``, so no hook
reads a query, key, value or dense output that the fused blocks no longer produce.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from . import bert, onednn
from .packing import Packing


class FusedSelfAttention(nn.Module):
    """``BertSelfAttention`` with query, key and value as one prepacked linear."""

    def __init__(self, attention: Any):  # a prepacked ``bert.BertSelfAttention``
        super().__init__()
        self.num_attention_heads = attention.num_attention_heads
        self.scaling = attention.scaling
        parts = [attention.query, attention.key, attention.value]
        weight = torch.cat([part.packed.to_dense() for part in parts])
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, onednn.BATCH_HINT)
        self.bias = torch.cat([part.bias for part in parts])

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, packing: Packing | None = None
    ) -> torch.Tensor:
        qkv = torch.ops.mkldnn._linear_pointwise(hidden_states, self.packed, self.bias, "none", [], "")
        if packing is not None:  # the real tokens only: attention needs the padded layout (``packing.py``)
            qkv = packing.pad(qkv)
        batch, length = qkv.shape[:2]
        # (B, T, 3, heads, d) -> three (B, heads, T, d) views, no copies
        query, key, value = qkv.view(batch, length, 3, self.num_attention_heads, -1).permute(2, 0, 3, 1, 4)
        context = nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask, scale=self.scaling
        )
        return bert.merge_heads(context, packing)


class FusedOutput(nn.Module):
    """``BertOutput``/``BertSelfOutput``: the prepacked linear and the residual add as one oneDNN call, then
    the layer norm (dropout is the identity in eval mode)."""

    def __init__(self, output: Any):  # a prepacked ``bert.BertOutput`` or ``bert.BertSelfOutput``
        super().__init__()
        self.packed, self.bias = output.dense.packed, output.dense.bias
        self.LayerNorm = output.LayerNorm

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        summed = torch.ops.mkldnn._linear_pointwise.binary(hidden_states, input_tensor, self.packed, self.bias, "add")
        return self.LayerNorm(summed)


ENV = "FEATX_FUSE"  # "1": fuse the native BERT on the CPU (off by default)


def requested() -> bool:
    """Whether ``FEATX_FUSE=1`` asks for the fusions."""
    return os.environ.get(ENV, "0") == "1"


def _plain(linear) -> bool:
    return isinstance(linear, onednn.PackedLinear) and linear.attr == "none" and linear.bias is not None


def _fusable(model: Any) -> bool:
    """A native BERT in eval mode whose every block ``prepack_linears`` packed as expected."""
    if type(model) is not bert.BertModel or model.training or not onednn.available():
        return False
    if not hasattr(torch.ops.mkldnn._linear_pointwise, "binary"):
        return False
    return all(_layer_fusable(layer) for layer in model.encoder.layer)


def _layer_fusable(layer: Any) -> bool:
    attention, outputs = layer.attention.self, (layer.attention.output, layer.output)
    return (
        type(attention) is bert.BertSelfAttention
        and all(_plain(getattr(attention, name)) for name in ("query", "key", "value"))
        and all(type(out) in (bert.BertOutput, bert.BertSelfOutput) and _plain(out.dense) for out in outputs)
    )


def fuse_bert(model: Any, qkv: bool = True, residual: bool = True) -> int:
    """Fuse every layer of a prepacked native ``BertModel`` in place; the number of blocks fused.

    0, model untouched: not featx's own BERT (a transformers model, whose modules hooks may read), not
    prepacked (GPU, float16, oneDNN off or missing), or the fused ops disagree with the plain ones here.
    ``qkv``/``residual``: which fusions (both by default; the switches serve ``bench/native_cpu.py``).
    """
    if not _fusable(model):
        return 0
    try:
        _check_parity(next(model.parameters()).dtype)
    except Exception:  # an op missing or misbehaving in this torch build: keep the prepacked model
        return 0
    return sum(_fuse_layer(layer, qkv, residual) for layer in model.encoder.layer)


def _fuse_layer(layer: Any, qkv: bool = True, residual: bool = True) -> int:
    """Swap one prepacked ``bert.BertLayer``'s blocks for the fused ones; how many."""
    if qkv:
        layer.attention.self = FusedSelfAttention(layer.attention.self)
    if residual:
        layer.attention.output, layer.output = FusedOutput(layer.attention.output), FusedOutput(layer.output)
    return int(qkv) + 2 * int(residual)


def _check_parity(dtype: torch.dtype) -> None:
    """One tiny layer, prepacked, against itself fused: the same outputs within the dtype's rounding."""
    settings = bert.BertSettings(hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=1)
    generator = torch.Generator().manual_seed(0)
    layer = bert.BertLayer(settings).eval()
    with torch.no_grad():
        for parameter in layer.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    layer = layer.to(dtype)
    onednn.prepack_linears(layer, torch.device("cpu"), dtype)
    x = torch.randn(2, 5, 32, generator=generator).to(dtype)
    mask = bert.sdpa_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]), 5, x.device)
    with torch.inference_mode():
        expected = layer(x, mask).float()
        _fuse_layer(layer)
        got = layer(x, mask).float()
    tolerance = 1e-5 if dtype == torch.float32 else 5e-2
    if got.shape != expected.shape or not torch.allclose(got, expected, atol=tolerance, rtol=tolerance):
        raise RuntimeError("fused BERT blocks disagree with the prepacked ones")
