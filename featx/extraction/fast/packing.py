"""Padding removed from featx's own encoders' per-token layers ("packing"), on the CPU.

A batch of B rows padded to length L holds B x L positions, of which only the real tokens matter; every linear,
layer norm and activation of a block works on one position at a time, so the padded positions cost as much as
real ones (the linears are 85-95% of a CPU forward pass) and are thrown away. ``Packing`` lays a batch's real
tokens out as one ``(tokens, width)`` matrix inside each block: the block's per-token layers run on it, attention
alone sees the padded ``(B, heads, L, d)`` layout (the query, key and value scattered into it, the context gathered
back), and the block's output leaves it padded, with zeros at the padded positions. So a block takes and gives
``(B, L, width)`` as before, and a hook on a block (the truncated forward's pre-hooks) sees, and may change, what
it always saw: each block gathers its rows from the padded input it is handed.

The features are those of the padded pass: each real token's rows go through the same products, with the same
keys masked out of attention (bit for bit for MiniLM, bert-base and all-mpnet-base-v2 on AVX-512 and with oneDNN
held to AVX2, 29 Nov 2026; oneDNN's products do not promise it for every row count, so to float rounding in
general). A padded position's own states are zeros instead of what the
padded pass computes there, which nothing reads (every pooling and token store takes real positions only).

When: the batch has at least ``PACK_FROM`` of its positions padded (below that, the scatters cost more than the
rows they save: measured about 1.5% of a MiniLM pass), the model runs on the CPU (the GPU path is not measured
yet: it stays padded), no hook is registered inside a block (it would see packed rows) nor on every module, and
``FEATX_PACK`` is not ``0``. BENCHMARKS.md has the figures.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import torch

ENV = "FEATX_PACK"  # "0": always run the padded batch
PACK_FROM = 0.04  # the share of padded positions from which packing pays for its scatters (measured)


class Packing:
    """Where a padded batch's real tokens are: ``pack`` takes them out of a ``(B, L, ...)`` tensor, ``pad`` puts
    a ``(tokens, ...)`` tensor back in the padded layout (zeros at the padded positions)."""

    def __init__(self, mask: torch.Tensor, device: torch.device):
        self.batch, self.length = mask.shape
        real = mask.reshape(-1).to(torch.bool)
        # computed from the host's mask, then handed to the device without waiting
        self.index = real.nonzero().squeeze(1).to(device, non_blocking=True)
        self.holes = (~real).nonzero().squeeze(1).to(device, non_blocking=True)

    @property
    def tokens(self) -> int:
        return int(self.index.numel())

    def pack(self, padded: torch.Tensor) -> torch.Tensor:
        """``(B, L, *rest)`` -> ``(tokens, *rest)``, real positions in row-major order."""
        return padded.reshape(self.batch * self.length, *padded.shape[2:]).index_select(0, self.index)

    def pad(self, packed: torch.Tensor) -> torch.Tensor:
        """``(tokens, *rest)`` -> ``(B, L, *rest)``, zeros at the padded positions."""
        out = packed.new_empty(self.batch * self.length, *packed.shape[1:])
        out.index_copy_(0, self.index, packed)
        out.index_fill_(0, self.holes, 0)  # only the holes are written twice: no full zero fill first
        return out.view(self.batch, self.length, *packed.shape[1:])


def _hooked_inside(blocks: Iterable[torch.nn.Module]) -> bool:
    """Whether a forward hook would see packed rows: one on a module inside a block, or on every module."""
    everywhere = torch.nn.modules.module
    if getattr(everywhere, "_global_forward_hooks", None) or getattr(everywhere, "_global_forward_pre_hooks", None):
        return True
    return any(
        module._forward_hooks or module._forward_pre_hooks
        for block in blocks
        for module in block.modules()
        if module is not block
    )


def plan_packing(blocks: Iterable[torch.nn.Module], mask: torch.Tensor | None, device: torch.device) -> Packing | None:
    """The ``Packing`` of a batch whose padding mask is ``mask`` (``(B, L)``, 1 at real tokens; the host's copy)
    through ``blocks``, or None where the padded batch runs as it is (the module's docstring says when)."""
    if mask is None or device.type != "cpu" or mask.dim() != 2 or os.environ.get(ENV, "1") == "0":
        return None
    holes = mask.numel() - int(mask.count_nonzero())
    if holes < PACK_FROM * mask.numel() or _hooked_inside(blocks):
        return None
    return Packing(mask, device)
