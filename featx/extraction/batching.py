"""Planning work: commit windows in corpus order, length-sorted batches within a window."""

from __future__ import annotations

import numpy as np
import torch

from .tokenize import TokenizedCorpus


def plan_windows(n_rows: int, rows_per_window: int, row_weights: np.ndarray | None = None,
                 weight_budget: float | None = None) -> list[tuple[int, int]]:
    """Split ``range(n_rows)`` into contiguous windows of at most ``rows_per_window`` rows.

    A window is the unit of commit (and of resume): its rows are written together.
    With ``row_weights``/``weight_budget`` (e.g. token counts when token-level
    states are kept) a window also closes once its weight would exceed the budget.
    """
    windows, start = [], 0
    while start < n_rows:
        stop = min(start + rows_per_window, n_rows)
        if row_weights is not None and weight_budget is not None:
            cumulative = np.cumsum(row_weights[start:stop])
            fits = int(np.searchsorted(cumulative, weight_budget, side="right"))
            stop = start + max(1, min(fits, stop - start))
        windows.append((start, stop))
        start = stop
    return windows


def plan_batches(lengths: np.ndarray, max_tokens: int, batch_size: int) -> list[np.ndarray]:
    """Group row positions into batches, longest first, so that padded size <= ``max_tokens``.

    Sorting by length keeps padding small; longest-first surfaces out-of-memory
    errors at the start of a run rather than at its end. ``mergesort`` is stable,
    so the plan is a deterministic function of the lengths (resume relies on it).
    """
    order = np.argsort(-lengths, kind="mergesort")
    batches, current, current_max = [], [], 0
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


def collate(tokens: TokenizedCorpus, rows: np.ndarray, pad_id: int, pin_memory: bool = False
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids`` and ``attention_mask`` (int64) for the given corpus rows."""
    starts = tokens.offsets[rows]
    lengths = tokens.offsets[rows + 1] - starts
    width = int(lengths.max())
    input_ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.arange(width)[None, :] < lengths[:, None]
    flat_positions = np.repeat(starts - np.cumsum(np.r_[0, lengths[:-1]]), lengths) + np.arange(int(lengths.sum()))
    input_ids[mask] = tokens.input_ids[flat_positions]
    ids_tensor = torch.from_numpy(input_ids)
    mask_tensor = torch.from_numpy(mask.astype(np.int64))
    if pin_memory:
        ids_tensor, mask_tensor = ids_tensor.pin_memory(), mask_tensor.pin_memory()
    return ids_tensor, mask_tensor
