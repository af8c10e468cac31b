"""The forward passes of sentence pairs (``pairs.py`` says what is stored; ``runner.py`` calls this).

Cross mode: one forward pass per batch with the token-type ids ``tokenizer(a, b)`` would hand the model,
and ``mean_a`` / ``mean_b`` pooled with each text's own mask (special tokens excluded). Separate mode:
side a and side b run as two independent batches through the same model; a row's features depend on
its own tokens only (padding is masked), so neither side ever sees the other or a batch neighbour.
"""

from __future__ import annotations

import inspect

import torch

from ... import store
from .pooling import mean_pool

# mean_a / mean_b are the plain masked mean, given a segment's mask instead of the whole row's.
SEGMENT_FUNCTIONS = {"mean_a": mean_pool, "mean_b": mean_pool}
SEGMENT_OF = {"mean_a": 0, "mean_b": 1}


def takes_type_ids(loaded) -> bool:
    """Whether a pair's token-type ids go to the model: as with ``model(**tokenizer(a, b))``, only when
    the tokenizer returns them and the model's forward takes them (BERT, MiniLM: yes; RoBERTa: no)."""
    names = getattr(loaded.tokenizer, "model_input_names", None) or []
    if "token_type_ids" not in names:
        return False
    try:
        return "token_type_ids" in inspect.signature(loaded.model.forward).parameters
    except (TypeError, ValueError):
        return False


def segment_masks(runner, mask: torch.Tensor, segments: torch.Tensor) -> dict[str, torch.Tensor]:
    """``{dataset path: mask}`` of every site's ``mean_a``/``mean_b``: real tokens of that segment only."""
    masks = {}
    for site in runner.plan.sites:
        for pooling, path in site.pooled_paths.items():
            if pooling in SEGMENT_OF:
                masks[path] = (mask.bool() & (segments == SEGMENT_OF[pooling])).to(mask.dtype)
    return masks


def pair_inputs(runner, input_ids: torch.Tensor, mask: torch.Tensor, pairs: dict):
    """States of one pair batch and the masks of the datasets that need their own."""
    device = runner.device
    if "pair" in pairs:  # separate: side b is a batch of its own, pooled into the pair_b site
        b_ids, b_mask = (tensor.to(device, non_blocking=True) for tensor in pairs["pair"])
        states = runner._forward(input_ids, mask)
        states[store.schema.PAIR_B_SITE] = runner._forward(b_ids, b_mask)[runner.plan.hidden.name]
        side_b = next(site for site in runner.plan.sites if site.name == store.schema.PAIR_B_SITE)
        return states, {path: b_mask for path in side_b.pooled_paths.values()}
    type_ids = pairs["token_type_ids"].to(device, non_blocking=True)
    segments = pairs["segments"].to(device, non_blocking=True)
    return runner._forward(input_ids, mask, type_ids), segment_masks(runner, mask, segments)
