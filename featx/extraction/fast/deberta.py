"""DeBERTa-v2/v3's disentangled attention bias on the band of relative positions a batch uses (CPU).

transformers' ``DisentangledSelfAttention.disentangled_attention_bias`` projects all ``2 x position_buckets``
relative positions (512 for deberta-v3-base) through the key and query projections in every layer, repeats the
result for every row of the batch, multiplies every query and key with all 512, and then gathers the ``L x L``
entries that rows of ``L`` tokens use: for 25-token rows about twenty times the work needed, and a copy of the
projections per row. ``band_relative_attention`` gives each such module of a loaded model a method computing the
same scores from the relative positions between the smallest and largest index the batch gathers, with the
projections broadcast over the batch instead of repeated. The scores are the same dot products, so features
move by float rounding only (the tests hold them to transformers' within 1e-5).

A module is changed only where, at load time, the new method agrees with the installed transformers' own on a
probe input (``_agrees``); anything the band method does not handle (no ``relative_pos``, keys of another
length than the queries, a batch-dependent position table) calls transformers' method.
"""

from __future__ import annotations

import types

import torch

PROBE_LENGTH = 7  # tokens of the load-time agreement check


def _transformers_bias(module):
    return type(module).disentangled_attention_bias


def _scale(layer: torch.Tensor, scale_factor: int) -> torch.Tensor:
    return torch.sqrt(torch.tensor(layer.size(-1), dtype=torch.float) * scale_factor)


def _banded_bias(self, query_layer, key_layer, relative_pos, rel_embeddings, scale_factor):
    """``disentangled_attention_bias`` on the band of relative positions in use (see the module docstring)."""
    heads, length = self.num_attention_heads, query_layer.size(1)
    if (
        relative_pos is None
        or relative_pos.dim() not in (2, 3, 4)
        or tuple(relative_pos.shape) != (1,) * (relative_pos.dim() - 2) + (length, length)  # one table for all rows
        or key_layer.size(-2) != length
        or not {"c2p", "p2c"} & set(self.pos_att_type)
    ):
        return _transformers_bias(self)(self, query_layer, key_layer, relative_pos, rel_embeddings, scale_factor)
    span = self.pos_ebd_size
    positions = relative_pos.reshape(length, length).to(device=query_layer.device, dtype=torch.long)
    indexes = {
        "c2p": torch.clamp(positions + span, 0, span * 2 - 1),
        "p2c": torch.clamp(-positions + span, 0, span * 2 - 1),
    }
    indexes = {kind: index for kind, index in indexes.items() if kind in self.pos_att_type}
    low = min(int(index.min()) for index in indexes.values())
    high = max(int(index.max()) for index in indexes.values())
    band = rel_embeddings[0 : span * 2][low : high + 1].unsqueeze(0)
    rows = query_layer.size(0) // heads
    score = 0
    for kind, index in indexes.items():
        # c2p: queries against the positions' keys; p2c: keys against the positions' queries, transposed
        states, projection = (
            (query_layer, self.key_proj if self.share_att_key else self.pos_key_proj)
            if kind == "c2p"
            else (key_layer, self.query_proj if self.share_att_key else self.pos_query_proj)
        )
        projected = self.transpose_for_scores(projection(band), heads)  # (heads, band, head size)
        products = torch.matmul(states.view(rows, heads, length, -1), projected.transpose(-1, -2))
        products = products.view(rows * heads, length, -1)
        att = torch.gather(products, dim=-1, index=(index - low).expand(rows * heads, length, length))
        att = att if kind == "c2p" else att.transpose(-1, -2)
        score = score + att / _scale(projected, scale_factor).to(dtype=att.dtype)
    return score


def _agrees(module, dtype: torch.dtype) -> bool:
    """Whether the band method gives what the installed transformers' method gives on a probe input."""
    generator = torch.Generator().manual_seed(0)
    heads, size = module.num_attention_heads, module.attention_head_size
    hidden = getattr(module.query_proj, "in_features", None)
    if not isinstance(hidden, int) or not isinstance(getattr(module, "pos_ebd_size", None), int):
        return False
    query, key = (torch.randn(2 * heads, PROBE_LENGTH, size, generator=generator).to(dtype) for _ in range(2))
    steps = torch.arange(PROBE_LENGTH)
    relative = (steps[:, None] - steps[None, :])[None]
    table = torch.randn(2 * module.pos_ebd_size, hidden, generator=generator).to(dtype)
    try:
        with torch.inference_mode():
            want = _transformers_bias(module)(module, query, key, relative, table, 3)
            got = _banded_bias(module, query, key, relative, table, 3)
    except Exception:  # another transformers' module of this name: leave it alone
        return False
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor) or want.shape != got.shape:
        return False
    tolerance = 1e-5 if dtype == torch.float32 else 3e-2
    return bool((got.float() - want.float()).abs().max() <= tolerance * max(float(want.float().abs().max()), 1.0))


def band_relative_attention(model: torch.nn.Module, device: torch.device, dtype: torch.dtype) -> int:
    """Give every DeBERTa-v2/v3 relative-attention module of ``model`` the band method (CPU only: on a GPU the
    band's bounds would cost a synchronisation per layer); the number of modules changed."""
    if device.type != "cpu":
        return 0
    changed = 0
    for module in model.modules():
        if type(module).__name__ != "DisentangledSelfAttention" or not getattr(module, "relative_attention", False):
            continue
        if not hasattr(type(module), "disentangled_attention_bias") or not _agrees(module, dtype):
            continue
        module.__dict__["disentangled_attention_bias"] = types.MethodType(_banded_bias, module)
        changed += 1
    return changed
