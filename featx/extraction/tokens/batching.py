"""Planning work: commit blocks in corpus order, length-sorted batches within a block."""

from __future__ import annotations

import numpy as np
import torch

from .tokenize import TokenizedCorpus


def plan_blocks(
    n_rows: int, rows_per_block: int, row_weights: np.ndarray | None = None, weight_budget: float | None = None
) -> list[tuple[int, int]]:
    """Split ``range(n_rows)`` into contiguous blocks of at most ``rows_per_block`` rows.

    A block is the unit of commit (and of resume): its rows are written together.
    With ``row_weights``/``weight_budget`` (e.g. token counts when token-level
    states are kept) a block also closes once its weight would exceed the budget.
    """
    blocks, start = [], 0
    while start < n_rows:
        stop = min(start + rows_per_block, n_rows)
        if row_weights is not None and weight_budget is not None:
            cumulative = np.cumsum(row_weights[start:stop])
            fits = int(np.searchsorted(cumulative, weight_budget, side="right"))
            stop = start + max(1, min(fits, stop - start))
        blocks.append((start, stop))
        start = stop
    return blocks


def plan_batches(lengths: np.ndarray, max_tokens: int, batch_size: int) -> list[np.ndarray]:
    """Group row positions into batches, longest first, so that padded size <= ``max_tokens``.

    Sorting by length keeps padding small; longest-first surfaces out-of-memory
    errors at the start of a run rather than at its end. ``mergesort`` is stable,
    so the plan is a deterministic function of the lengths (resume relies on it).
    """
    order = np.argsort(-lengths, kind="mergesort")
    batches: list[np.ndarray] = []
    current: list[int] = []
    current_max = 0
    for position in order:
        length = int(lengths[position])
        longest = max(current_max, length)
        if current and (len(current) + 1 > batch_size or longest * (len(current) + 1) > max_tokens):
            batches.append(np.asarray(current, dtype=np.int64))
            current, longest = [], length
        current.append(position)
        current_max = longest
    if current:
        batches.append(np.asarray(current, dtype=np.int64))
    return batches


def _padded(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, fill: int) -> np.ndarray:
    """Rows ``flat[starts[i]:starts[i] + lengths[i]]``, right-padded with ``fill`` to the longest (int64)."""
    width = int(lengths.max())
    out = np.full((len(starts), width), fill, dtype=np.int64)
    real = np.arange(width)[None, :] < lengths[:, None]
    flat_positions = np.repeat(starts - np.cumsum(np.r_[0, lengths[:-1]]), lengths) + np.arange(int(lengths.sum()))
    out[real] = flat[flat_positions]
    return out


def collate(tokens: TokenizedCorpus, rows: np.ndarray, pad_id: int, pin_memory: bool = False):
    """Right-padded ``input_ids`` and ``attention_mask`` (int64) for the given corpus rows.

    Sentence pairs add a third item, ``{name: tensor}``: ``token_type_ids`` and ``segments`` (cross mode,
    padded with 0 and -1), or ``pair``, side b's own ``(input_ids, attention_mask)`` (separate mode); prompts
    add ``span`` (padded with 0) and, with ``--pool-at``, ``at`` (one position per row)."""
    starts = tokens.offsets[rows]
    lengths = tokens.offsets[rows + 1] - starts
    width = int(lengths.max())
    tensors = {
        "input_ids": _padded(tokens.input_ids, starts, lengths, pad_id),
        "mask": (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64),
    }
    if tokens.type_ids is not None and tokens.segments is not None:
        tensors["token_type_ids"] = _padded(tokens.type_ids, starts, lengths, 0)
        tensors["segments"] = _padded(tokens.segments, starts, lengths, -1)
    if tokens.span is not None:  # prompts: the text's span, padded with 0
        tensors["span"] = _padded(tokens.span, starts, lengths, 0)
    if tokens.at is not None:  # --pool-at: each row's token
        tensors["at"] = tokens.at[rows].astype(np.int64)
    tensors = {name: torch.from_numpy(values) for name, values in tensors.items()}
    if pin_memory:
        tensors = {name: values.pin_memory() for name, values in tensors.items()}
    ids_tensor, mask_tensor = tensors.pop("input_ids"), tensors.pop("mask")
    if tokens.pair is not None:
        tensors["pair"] = collate(tokens.pair, rows, pad_id, pin_memory)
    if tokens.contrast:  # --contrast: each further answer's prompts, collated the same way
        tensors["contrast"] = [collate(answer, rows, pad_id, pin_memory) for answer in tokens.contrast]
    return (ids_tensor, mask_tensor, tensors) if tensors else (ids_tensor, mask_tensor)


def batch_tokens(batch) -> int:
    """The tokens a collated batch (``collate``) puts through the model: its rows', and side b's of a separate-mode
    pair and every further ``--contrast`` answer's, each of which runs its own forward pass."""
    extra = batch[2] if len(batch) > 2 else {}
    answers = [extra["pair"]] if "pair" in extra else []
    answers += extra.get("contrast") or []
    return int(batch[1].sum()) + sum(batch_tokens(answer) for answer in answers)
