"""Commit blocks and batches: every row exactly once, budgets kept, padding never leaks into a row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from featx.extraction.tokens.batching import batch_tokens, collate, plan_batches, plan_blocks
from featx.extraction.tokens.tokenize import TokenizedCorpus


def _tokenized(lengths) -> TokenizedCorpus:
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return TokenizedCorpus(
        input_ids=np.arange(1, int(offsets[-1]) + 1, dtype=np.int32),
        offsets=offsets,
        full_lengths=lengths.astype(np.int32),
        word_ids=None,
    )


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=60),
    max_tokens=st.integers(40, 300),
    batch_size=st.integers(1, 16),
)
def test_batches_cover_every_row_once_within_budget(lengths, max_tokens, batch_size):
    lengths = np.array(lengths)
    batches = plan_batches(lengths, max_tokens, batch_size)
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= batch_size
        assert len(batch) == 1 or len(batch) * lengths[batch].max() <= max_tokens


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 30), min_size=1, max_size=80),
    rows=st.integers(1, 20),
    tokens=st.one_of(st.none(), st.integers(30, 200)),
)
def test_blocks_are_contiguous_and_keep_both_budgets(lengths, rows, tokens):
    lengths = np.array(lengths)
    blocks = plan_blocks(len(lengths), rows, lengths if tokens else None, tokens)
    assert blocks[0][0] == 0 and blocks[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:], strict=False))
    for start, stop in blocks:
        assert 1 <= stop - start <= rows
        if tokens is not None and stop - start > 1:
            assert lengths[start:stop].sum() <= tokens


def test_collate_pads_with_the_pad_id_and_masks_it():
    tokenized = _tokenized([3, 1, 4])
    ids, mask = collate(tokenized, np.array([2, 1]), pad_id=0)
    assert ids.tolist() == [[5, 6, 7, 8], [4, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 1], [1, 0, 0, 0]]


def test_a_batch_and_a_corpus_count_every_forward_pass_s_tokens():
    """Side b of a separate-mode pair and each further --contrast answer run forward passes of their own: the
    progress bar's rate (batch_tokens) and the dry run (forward_tokens) count them, where they counted the rows'
    (side a's, answer 0's) only."""
    plain = _tokenized([3, 1, 4])
    assert batch_tokens(collate(plain, np.array([2, 1]), pad_id=0)) == 5 and plain.forward_tokens == 8
    pair = _tokenized([3, 1, 4])
    pair.pair = _tokenized([2, 2, 6])
    assert batch_tokens(collate(pair, np.array([2, 1]), pad_id=0)) == 5 + 8 and pair.forward_tokens == 8 + 10
    contrast = _tokenized([3, 1, 4])
    contrast.contrast = [_tokenized([4, 2, 5]), _tokenized([5, 3, 6])]
    assert batch_tokens(collate(contrast, np.array([2, 1]), pad_id=0)) == 5 + 7 + 9
    assert contrast.forward_tokens == 8 + 11 + 14
