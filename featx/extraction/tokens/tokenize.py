"""Tokenising a whole corpus once into flat arrays (ids, offsets, untruncated lengths)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ...errors import ModelError


@dataclass
class TokenizedCorpus:
    """Token ids of every row, concatenated, truncated to ``max_length`` with special tokens kept."""

    input_ids: np.ndarray  # (total_tokens,) int32
    offsets: np.ndarray  # (n_rows + 1,) int64; row i is input_ids[offsets[i]:offsets[i+1]]
    full_lengths: np.ndarray  # (n_rows,) int32, token count before truncation (specials included)
    word_ids: np.ndarray | None  # (total_tokens,) int32, -1 for special tokens; None unless asked for
    # Word inputs (word_tokens.py): row i owns words word_offsets[i]:word_offsets[i+1], each of n_subwords tokens
    word_offsets: np.ndarray | None = None
    n_subwords: np.ndarray | None = None
    # Sentence pairs (pairs.py). Cross mode: token-type ids and segments (0 = a, 1 = b, -1 = special), (total_tokens,).
    type_ids: np.ndarray | None = None
    segments: np.ndarray | None = None
    pair: TokenizedCorpus | None = None  # separate mode: side b, tokenised on its own
    # Prompts (templates.py, positions.py): 1 where a token is the row's own text (the span), 0 elsewhere,
    # (total_tokens,) int8; and each row's --pool-at token, counted from the row's first token, (n_rows,) int64.
    span: np.ndarray | None = None
    at: np.ndarray | None = None
    contrast: list[TokenizedCorpus] | None = None  # --contrast: the prompts of answers 1, 2, ... (answer 0 is this)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets).astype(np.int32)

    @property
    def batch_lengths(self) -> np.ndarray:
        """Tokens a row puts in a batch: its length, or the longer side's in separate pair mode."""
        if self.contrast:  # --contrast: every answer's prompt runs in the batch
            return np.max([self.lengths, *(answer.lengths for answer in self.contrast)], axis=0).astype(np.int32)
        return self.lengths if self.pair is None else np.maximum(self.lengths, self.pair.lengths)

    @property
    def forward_tokens(self) -> int:
        """Tokens the forward passes take: the rows', side b's of a separate-mode pair, every further answer's of
        ``--contrast`` (each runs a forward pass of its own)."""
        others = [self.pair] if self.pair is not None else []
        return int(self.lengths.sum()) + sum(int(other.lengths.sum()) for other in others + (self.contrast or []))

    @property
    def truncated(self) -> np.ndarray:
        return self.full_lengths > self.lengths

    @property
    def rows_truncated(self) -> np.ndarray:
        """Rows cut to fit, as extract's summary counts them: either side of a separate-mode pair."""
        return self.truncated if self.pair is None else self.truncated | self.pair.truncated

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, index: int) -> np.ndarray:
        return self.input_ids[self.offsets[index] : self.offsets[index + 1]]


def _backend(tokenizer):
    """The tokenizer's Rust backend without truncation or padding: featx's own tokenizer's as it is (it has
    neither, and nothing changes it: ``NativeTokenizer.plain_backend``), else a copy (model folders often ship
    truncation/padding settings, and transformers sets them on its backend per call; the copy costs about
    40 ms on a 30k vocabulary)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    if getattr(tokenizer, "plain_backend", False) and backend.truncation is None and backend.padding is None:
        return backend
    backend = copy.deepcopy(backend)
    backend.no_truncation()
    backend.no_padding()
    return backend


def fast_backend(tokenizer):
    """The tokenizer's Rust ``tokenizers`` backend; a clear error for a slow (Python) tokenizer."""
    backend = _backend(tokenizer)
    if backend is None:
        raise ModelError(
            f"tokenizer {type(tokenizer).__name__} has no fast (Rust) backend",
            "featx needs a fast tokenizer; most Hugging Face models ship a tokenizer.json",
        )
    return backend


def special_layout(tokenizer) -> tuple[int, int]:
    """How many special tokens the tokenizer puts before and after a text (e.g. 1, 1 for [CLS] .. [SEP])."""
    backend = fast_backend(tokenizer)
    processed = backend.post_process(backend.encode("a", add_special_tokens=False))
    mask = list(processed.special_tokens_mask)
    lead = next((i for i, special in enumerate(mask) if not special), len(mask))
    trail = next((i for i, special in enumerate(reversed(mask)) if not special), 0)
    return lead, trail


def tokenize_texts(
    tokenizer,
    texts: list[str],
    max_length: int,
    with_word_ids: bool = False,
    chunk_size: int = 8192,
    progress=None,
    truncate: bool = True,
) -> TokenizedCorpus:
    """Tokenise ``texts`` into a ``TokenizedCorpus``; rows longer than ``max_length`` are truncated
    (unless ``truncate`` is False: ``--long window`` keeps every token and runs long rows in windows)."""
    backend = fast_backend(tokenizer)
    n_special = backend.post_process(backend.encode("", add_special_tokens=False)).__len__()
    budget = max_length - n_special if truncate else float("inf")
    ids_parts, word_parts = [], []
    lengths = np.empty(len(texts), dtype=np.int64)
    full = np.empty(len(texts), dtype=np.int32)
    for start in range(0, len(texts), chunk_size):
        encodings = backend.encode_batch(texts[start : start + chunk_size], add_special_tokens=False)
        chunk_ids: list[int] = []  # one flat array per chunk, not one small array per row
        chunk_words: list[int] = []
        for offset, encoding in enumerate(encodings):
            row = start + offset
            full[row] = len(encoding.ids) + n_special
            if len(encoding.ids) > budget:
                encoding.truncate(budget)
            processed = backend.post_process(encoding)
            ids = processed.ids
            lengths[row] = len(ids)
            chunk_ids.extend(ids)
            if with_word_ids:
                chunk_words.extend(-1 if w is None else w for w in processed.word_ids)
        ids_parts.append(np.asarray(chunk_ids, dtype=np.int32))
        if with_word_ids:
            word_parts.append(np.asarray(chunk_words, dtype=np.int32))
        if progress is not None:
            progress.update(len(encodings))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    input_ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype=np.int32)
    word_ids = (np.concatenate(word_parts) if word_parts else np.zeros(0, dtype=np.int32)) if with_word_ids else None
    return TokenizedCorpus(input_ids=input_ids, offsets=offsets, full_lengths=full, word_ids=word_ids)
