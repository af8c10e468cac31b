"""Sentence pairs (``--text-pair-col``): the options, the pair tokenisation and the stored layout.

Two modes:

- ``cross`` (the default): each row is one sequence in the model's own pair format, exactly what
  ``tokenizer(a, b)`` gives (special tokens, token-type ids where the tokenizer returns them,
  ``longest_first`` truncation to the model's maximum, counted per row). Besides the usual poolings
  over the whole pair, ``mean_a`` and ``mean_b`` average each text's own tokens (special tokens
  excluded; membership from the tokenizer's sequence ids, so RoBERTa-like models with a single
  token type are served too). A tokenizer whose pair format puts nothing between the texts (GPT-2, Qwen2) is
  refused (``refuse_glued_pairs``): its pairs would be one run-on text; a template names both columns instead.
- ``separate``: each text is encoded on its own, exactly as extracting that column alone; side a is
  stored where a plain extraction stores it, side b as the site ``pair_b`` (``store.schema.PAIR_B_SITE``).

Torch-free (the config's validation imports it); the forward passes are in ``pair_runner.py``.
"""

from __future__ import annotations

import copy

import numpy as np

from ... import store
from ...errors import InputError, ModelError
from ...options import on_command_line, spoken, spoken_value
from ...selection import SEGMENT_POOLING_NAMES
from ..tokens.tokenize import TokenizedCorpus, fast_backend, tokenize_texts
from .corpus import IN_MEMORY

PAIR_MODES = ("cross", "separate")
SEGMENT_POOLINGS = SEGMENT_POOLING_NAMES  # cross mode: the masked mean of each text's own tokens
SPECIAL_SEGMENT = -1  # the segment of special tokens ([CLS], [SEP], ...)


def check_pair_options(config) -> None:
    """``--text-pair-col`` and ``--pair-mode``, validated with the rest of ``ExtractConfig``."""
    pair_col, mode = config.text_pair_col, config.pair_mode
    if pair_col is None:
        if mode is not None:
            raise InputError(
                f"{spoken_value(config, 'pair_mode', mode)} needs {spoken(config, 'text_pair_col')}",
                f"name the column of each row's second text, e.g. {spoken_value(config, 'text_pair_col', 'sentence2')}",
            )
        return
    if not isinstance(pair_col, str) or not pair_col.strip():
        raise InputError(f"{spoken(config, 'text_pair_col')} is empty", "name the column of each row's second text")
    if pair_col == config.text_col:
        raise InputError(
            f"{spoken_value(config, 'text_pair_col', pair_col, shown=repr(pair_col))} is the text column itself",
            "the pair column holds each row's second text, e.g. "
            + (" " if on_command_line() else ", ").join(
                (spoken_value(config, "text_col", "sentence1"), spoken_value(config, "text_pair_col", "sentence2"))
            ),
        )
    mode = "cross" if mode is None else str(mode).strip().lower()
    if mode not in PAIR_MODES:
        raise InputError(
            f"{spoken_value(config, 'pair_mode', config.pair_mode, shown=repr(config.pair_mode))} is not understood",
            "use cross (one sequence in the model's pair format) or separate (each text on its own)",
        )
    object.__setattr__(config, "pair_mode", mode)
    _refuse_combinations(config, mode)


def _refuse_combinations(config, mode: str) -> None:
    cross, separate = spoken_value(config, "pair_mode", "cross"), spoken_value(config, "pair_mode", "separate")
    if config.long == "window":
        raise InputError(
            f"{spoken_value(config, 'long', 'window')} does not apply to sentence pairs",
            f"leave {spoken(config, 'long')} out: pairs are truncated longest-first to the model's maximum",
        )
    if config.shards is not None or config.shard_index is not None:
        raise InputError("--shards does not support sentence pairs yet", "extract the pair corpus in one process")
    if mode == "separate" and config.tokens:
        raise InputError(
            f"{(tokens := spoken_value(config, 'tokens', True))} is stored for {cross} only",
            f"use {cross} (token segments recorded), or extract each column alone with {tokens}",
        )
    if mode == "separate" and str(config.sites).strip().lower() != "hidden":
        raise InputError(
            f"{spoken(config, 'sites')} besides hidden is not supported with {separate}",
            f"leave {spoken(config, 'sites')} out, or use {cross}",
        )


def pair_poolings(config, available: tuple[str, ...]) -> tuple[str, ...]:
    """The poolings ``--pooling`` may name: cross mode adds ``mean_a`` and ``mean_b``."""
    return tuple(available) + SEGMENT_POOLINGS if config.pair_mode == "cross" else tuple(available)


def pair_fingerprint(config) -> dict:
    """The pair options' part of the fingerprint: empty without a pair column (plain files keep theirs)."""
    if config.text_pair_col is None:
        return {}
    return {"text_pair_col": config.text_pair_col, "pair_mode": config.pair_mode}


def pair_b_layout(config, hidden: store.schema.SiteLayout) -> list[store.schema.SiteLayout]:
    """Separate mode: side b's layout (every pooling and layer of hidden, as site ``pair_b``)."""
    if config.pair_mode != "separate":
        return []
    return [store.schema.SiteLayout(store.schema.PAIR_B_SITE, hidden.layers, hidden.width, hidden.poolings)]


def pair_attributes(config) -> dict:
    """Root attributes of a pair file (none for a plain one)."""
    if config.text_pair_col is None:
        return {}
    return {store.schema.PAIR_MODE: config.pair_mode, store.schema.TEXT_PAIR_COL: config.text_pair_col}


def tokenize_corpus(
    config, tokenizer, corpus, max_length: int, truncate: bool = True, texts_tokenizer=tokenize_texts
) -> TokenizedCorpus:
    """The corpus tokenised as ``config`` says: plain texts (with ``texts_tokenizer``), cross-encoded pairs,
    or both sides apart."""
    if config.text_pair_col is None:
        return texts_tokenizer(tokenizer, corpus.texts, max_length, with_word_ids=config.tokens, truncate=truncate)
    if config.pair_mode == "separate":
        side_a = tokenize_texts(tokenizer, corpus.texts, max_length)
        side_a.pair = tokenize_texts(tokenizer, corpus.pair_texts, max_length)
        return side_a
    refuse_glued_pairs(config, tokenizer)
    return tokenize_pairs(tokenizer, corpus.texts, corpus.pair_texts, max_length, with_word_ids=config.tokens)


def refuse_glued_pairs(config, tokenizer) -> None:
    """Refuse cross mode where the tokenizer's pair format puts nothing between the two texts (GPT-2's and
    Qwen2's have no pair template): ``tokenizer(a, b)`` would be one run-on text, ``'A man sings.A dog barks.'``."""
    try:
        sequences = list(fast_backend(tokenizer).encode("a", "b", add_special_tokens=True).sequence_ids)
        glued = sequences.index(1) == len(sequences) - sequences[::-1].index(0)  # b's first token right after a's last
    except Exception:  # no pair format at all: tokenize_pairs says so
        return
    if not glued:
        return
    both = "{" + str(config.text_col) + "}\n{" + str(config.text_pair_col) + "}"
    separate = spoken_value(config, "pair_mode", "separate")
    hint = (  # featx.embed's texts have no columns a template could name: the caller joins them
        f"join each pair into one text yourself (e.g. a + '\\n' + b) and leave text_pairs out, or use {separate}"
        if str(config.corpus) == IN_MEMORY
        else f"name both columns in a template instead of {spoken(config, 'text_pair_col')}, e.g. "
        f"{spoken_value(config, 'template', both, shown=repr(both))}, or use {separate}"
    )
    raise InputError(
        f"{spoken_value(config, 'pair_mode', 'cross')}: the tokenizer's pair format puts nothing between the two "
        "texts, so the model would read each pair as one run-on text ('A man sings.A dog barks.')",
        hint,
    )


def _pair_backends(tokenizer, max_length: int):
    backend = fast_backend(tokenizer)
    try:
        n_special = backend.num_special_tokens_to_add(True)
        backend.post_process(
            backend.encode("a", add_special_tokens=False), backend.encode("b", add_special_tokens=False)
        )
    except Exception as err:  # a post-processor without a pair template
        raise ModelError(
            f"tokenizer {type(tokenizer).__name__} has no pair format ({err})",
            "use a model whose tokenizer encodes text pairs, or --pair-mode separate",
        ) from None
    if max_length - n_special < 2:
        raise InputError(
            f"--max-length {max_length} leaves no room for a pair besides {n_special} special tokens",
            "raise --max-length",
        )
    truncating = copy.deepcopy(backend)
    truncating.enable_truncation(max_length, strategy="longest_first")
    return backend, truncating


def tokenize_pairs(
    tokenizer,
    texts_a: list[str],
    texts_b: list[str],
    max_length: int,
    with_word_ids: bool = False,
    chunk_size: int = 8192,
) -> TokenizedCorpus:
    """Cross mode: each ``(a, b)`` as ``tokenizer(a, b)`` encodes it, ``longest_first`` truncated to
    ``max_length``; token-type ids and each token's segment (0 = a, 1 = b, -1 = special) kept."""
    backend, truncating = _pair_backends(tokenizer, max_length)
    n_rows = len(texts_a)
    ids: list[int] = []
    types: list[int] = []
    segments: list[int] = []
    words: list[int] = []
    lengths = np.empty(n_rows, dtype=np.int64)
    full = np.empty(n_rows, dtype=np.int32)
    for start in range(0, n_rows, chunk_size):
        pairs = list(zip(texts_a[start : start + chunk_size], texts_b[start : start + chunk_size], strict=False))
        for offset, encoding in enumerate(backend.encode_batch(pairs, add_special_tokens=True)):
            row = start + offset
            full[row] = len(encoding.ids)
            if len(encoding.ids) > max_length:
                encoding = truncating.encode(*pairs[offset], add_special_tokens=True)
            lengths[row] = len(encoding.ids)
            ids.extend(encoding.ids)
            types.extend(encoding.type_ids)
            segments.extend(SPECIAL_SEGMENT if sequence is None else sequence for sequence in encoding.sequence_ids)
            if with_word_ids:
                words.extend(-1 if word is None else word for word in encoding.word_ids)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return TokenizedCorpus(
        input_ids=np.asarray(ids, dtype=np.int32),
        offsets=offsets,
        full_lengths=full,
        word_ids=np.asarray(words, dtype=np.int32) if with_word_ids else None,
        type_ids=np.asarray(types, dtype=np.int32),
        segments=np.asarray(segments, dtype=np.int8),
    )
