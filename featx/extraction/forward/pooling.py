"""Poolings: pure functions of hidden states and an attention mask.

``states`` has shape ``(batch, *extra, tokens, hidden)`` (``extra`` is usually the
layer axis) and ``mask`` has shape ``(batch, tokens)``, true for real tokens.
Padding never contributes. Every sequence must have at least one real token. featx pads on
the right, but the poolings hold for left padding too: ``cls`` is the first real token and
``last`` the last real token wherever the padding sits.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def _expanded_mask(mask: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """Reshape ``(batch, tokens)`` to broadcast against ``states`` as ``(batch, 1.., tokens, 1)``."""
    extra = states.dim() - 3
    return mask.bool().reshape(mask.shape[0], *([1] * extra), mask.shape[1], 1)


def _gather_token(states: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """``states[b, ..., position[b], :]`` for every row ``b``."""
    index = position.reshape(-1, *([1] * (states.dim() - 2)), 1)
    index = index.expand(*states.shape[:-2], 1, states.shape[-1])
    return states.gather(-2, index).squeeze(-2)


def cls_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The first real token's state ([CLS] for BERT)."""
    return _gather_token(states, mask.long().argmax(dim=1))  # the first 1 of each row


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens, accumulated in float32 whatever the compute dtype."""
    if states.device.type != "cpu":  # on accelerators the masked sum is cheap and needs no host sync
        m = _expanded_mask(mask, states)
        summed = torch.where(m, states, 0).sum(dim=-2, dtype=torch.float32)
        return (summed / m.sum(dim=-2, dtype=torch.float32).clamp_min(1.0)).to(states.dtype)
    # A (1 x tokens) @ (tokens x hidden) product per sequence: no masked copy of the states.
    weights = mask.to(torch.float32).reshape(mask.shape[0], *([1] * (states.dim() - 3)), 1, mask.shape[1])
    summed = torch.matmul(weights, states.to(torch.float32)).squeeze(-2)
    if not torch.isfinite(summed).all():
        # 0 * inf is NaN: non-finite values in the padding must not leak, so mask them out instead.
        summed = torch.where(_expanded_mask(mask, states), states, 0).sum(dim=-2, dtype=torch.float32)
    count = weights.sum(dim=-1).clamp_min(1.0)
    return (summed / count).to(states.dtype)


def max_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise maximum over real tokens."""
    m = _expanded_mask(mask, states)
    if states.device.type != "cpu":  # on accelerators masked_fill is cheap and needs no host sync
        return states.masked_fill(~m, float("-inf")).amax(dim=-2)
    if bool(m.all()):  # no padding in the batch
        return states.amax(dim=-2)
    # Padding pushed to -inf by adding a (batch, .., tokens, 1) bias of 0 and -inf: on the CPU a broadcast add
    # is about 4x faster than masked_fill's mask broadcast over the hidden axis (the largest pooling cost).
    bias = torch.zeros(m.shape, dtype=states.dtype).masked_fill_(~m, float("-inf"))
    pooled = (states + bias).amax(dim=-2)
    if torch.isnan(pooled).any():
        # +inf (or NaN) in the padding plus -inf is NaN: such padding must not leak, so mask it out instead.
        return states.masked_fill(~m, float("-inf")).amax(dim=-2)
    return pooled


def last_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last real token's state ([SEP] for BERT; the token that has seen the whole text in a causal model)."""
    positions = torch.arange(mask.shape[1], device=mask.device)
    last = torch.where(mask.bool(), positions, -1).amax(dim=1).clamp_min(0)  # (batch,), either padding side
    return _gather_token(states, last)


def make_pooler_pool(
    pooler: torch.nn.Module, dtype: torch.dtype | None = None
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The model's own pooler head (e.g. BERT's dense+tanh on [CLS]) applied to every layer.

    ``dtype``: cast the [CLS] states to it first (the pooler's own dtype, e.g. a float32 copy of the
    head of a bf16 model).
    """

    def pooler_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        first = states[..., :1, :]
        flat = first.reshape(-1, 1, states.shape[-1])
        if dtype is not None:
            flat = flat.to(dtype)
        return pooler(flat).reshape(*states.shape[:-2], states.shape[-1])

    return pooler_pool


POOLING_FUNCTIONS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "cls": cls_pool,
    "mean": mean_pool,
    "max": max_pool,
    "last": last_pool,
}

# Prompts (positions.py): the span poolings are the plain ones given the text's own mask, and ``at`` is ``last``
# given a mask that holds the --pool-at token only; padding never contributes, whichever side it sits on.
PROMPT_FUNCTIONS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "span_mean": mean_pool,
    "span_max": max_pool,
    "span_last": last_pool,
    "at": last_pool,
}


def prompt_masks(sites, mask: torch.Tensor, span: torch.Tensor | None, at: torch.Tensor | None) -> dict:
    """``{dataset path: mask}`` of every site's prompt poolings: the span's real tokens, or the ``at`` token.

    ``at`` counts from each row's first real token, so it holds for left padding too."""
    masks: dict[str, torch.Tensor] = {}
    real = mask.bool()
    if span is not None:
        span_mask = (real & span.bool()).to(mask.dtype)
    if at is not None:
        first = real.long().argmax(dim=1)  # 0 with right padding
        positions = torch.arange(mask.shape[1], device=mask.device)[None, :]
        at_mask = (real & (positions == (first + at)[:, None])).to(mask.dtype)
    for site in sites:
        for pooling, path in site.pooled_paths.items():
            if pooling == "at" and at is not None:
                masks[path] = at_mask
            elif pooling in PROMPT_FUNCTIONS and pooling != "at" and span is not None:
                masks[path] = span_mask
    return masks
