"""Word vectors from subword states: ``first``, ``last`` or ``mean`` subword of each word, pooled on
the device from the runner's token states, per stored layer of ``hidden``.

A batch's words are numbered in batch order (row by row, word by word): ``word_index`` gives each token position
its word's slot in the batch, -1 for special tokens and padding. Every word has at least one subword (the
tokenisation refuses words without any, ``word_tokens.py``), and long sentences run in windows whose stitched
states hold every token, so no word ever loses its subwords.
"""

from __future__ import annotations

import numpy as np
import torch

from ..tokens.tokenize import TokenizedCorpus


def batch_word_index(tokenized: TokenizedCorpus, rows: np.ndarray, width: int) -> torch.Tensor:
    """``(B, width)`` int64: each token's word slot in the batch (rows in the given order), -1 elsewhere."""
    word_ids, word_offsets = _word_arrays(tokenized)
    index = np.full((len(rows), width), -1, dtype=np.int64)
    base = 0
    for position, row in enumerate(rows):
        row = int(row)
        words = word_ids[tokenized.offsets[row] : tokenized.offsets[row + 1]]
        index[position, : len(words)] = np.where(words >= 0, words + base, -1)
        base += int(word_offsets[row + 1] - word_offsets[row])
    return torch.from_numpy(index)


def _word_arrays(tokenized: TokenizedCorpus) -> tuple[np.ndarray, np.ndarray]:
    """Word inputs' ``word_ids`` (each token's word in its row) and ``word_offsets`` (each row's words)."""
    if tokenized.word_ids is None or tokenized.word_offsets is None:
        raise ValueError("the tokenised corpus has no words (word inputs only)")
    return tokenized.word_ids, tokenized.word_offsets


def with_word_index(plan, tokenized: TokenizedCorpus, rows: np.ndarray, batch: tuple) -> tuple:
    """A collated batch ``(input_ids, mask)``, with each token's word slot when word vectors are stored."""
    if not plan.word_paths:
        return batch
    return (*batch, {"word_index": batch_word_index(tokenized, rows, batch[0].shape[1])})


def row_word_ids(plan, tokenized: TokenizedCorpus, row: int) -> np.ndarray | None:
    """The word ids of one row's tokens (-1 for specials), when word vectors are stored."""
    if not plan.word_paths:
        return None
    word_ids, _ = _word_arrays(tokenized)
    return word_ids[tokenized.offsets[row] : tokenized.offsets[row + 1]].astype(np.int64)


def block_weights(plan, tokenized: TokenizedCorpus) -> tuple[np.ndarray, float]:
    """Each row's share of a commit block's host memory (its word vectors, and token states with
    ``--tokens``) and the budget, for ``plan_blocks``: a block of long sentences closes early."""
    from ..plan import COMMIT_BLOCK_BYTES

    words = np.diff(_word_arrays(tokenized)[1]).astype(np.float64)
    weights = words * plan.word_bytes() / COMMIT_BLOCK_BYTES
    if plan.with_tokens:
        return weights + tokenized.lengths / plan.block_tokens, 2.0
    return weights, 1.0


def pool_words(layers: list[torch.Tensor], word_index: torch.Tensor, poolings) -> dict[str, torch.Tensor]:
    """``{pooling: (n_words, L, H)}`` from ``L`` layers of ``(B, T, H)`` states and ``(B, T)`` word slots."""
    flat_index = word_index.reshape(-1)
    positions = torch.nonzero(flat_index >= 0).squeeze(1)
    slots = flat_index[positions]
    n_words = int(slots.max()) + 1 if len(slots) else 0
    counts = torch.bincount(slots, minlength=n_words)
    first = torch.full((n_words,), flat_index.numel(), dtype=torch.long, device=slots.device)
    first = first.scatter_reduce(0, slots, positions, reduce="amin")
    last = torch.full((n_words,), -1, dtype=torch.long, device=slots.device)
    last = last.scatter_reduce(0, slots, positions, reduce="amax")
    out: dict[str, list[torch.Tensor]] = {name: [] for name in poolings}
    for layer in layers:
        flat = layer.reshape(-1, layer.shape[-1])
        if "first" in out:
            out["first"].append(flat[first])
        if "last" in out:
            out["last"].append(flat[last])
        if "mean" in out:  # accumulated in float32 whatever the compute dtype, like the mean pooling
            summed = torch.zeros((n_words, flat.shape[1]), dtype=torch.float32, device=flat.device)
            summed.index_add_(0, slots, flat[positions].to(torch.float32))
            out["mean"].append((summed / counts[:, None].to(torch.float32)).to(flat.dtype))
    return {name: torch.stack(parts, dim=1) for name, parts in out.items()}
