"""Tokenising word inputs: the model sees each sentence as its words (pre-tokenised), so word
boundaries are exact; every token keeps the index of its word (-1 for special tokens).

Nothing is truncated: sentences longer than the model's maximum run in overlapping windows (``long_windows.py``).
A word the tokenizer turns into no token at all (e.g. only a control character) is refused here, before the
first forward pass, naming its sentence.
"""

from __future__ import annotations

import json

import numpy as np

from ...errors import InputError
from ...safe_files import loads_json
from .tokenize import TokenizedCorpus, fast_backend


def _empty_word_error(sentence_id: str, words: list[str], counts: np.ndarray) -> InputError:
    position = int(np.flatnonzero(counts == 0)[0])
    return InputError(
        f"sentence '{sentence_id}': word {position + 1} ({words[position]!r}) gives the tokenizer "
        "no token at all, so it has no vector",
        "remove or replace such words (control or zero-width characters) in the input",
    )


def marks_spaces(backend) -> bool:
    """Whether the tokenizer keeps a word's leading space in its first token (byte-level BPE: GPT-2, RoBERTa...).

    Such a tokenizer, given words one by one, would see none of the spaces between them ("Ġcat" becomes
    "cat"): every word but the first then gets its space back, so the tokens are those of the words joined
    by spaces, as in the sentence's text."""
    try:
        pre_tokenizer = loads_json(backend.to_str()).get("pre_tokenizer")
    except (ValueError, AttributeError):
        return False
    return '"ByteLevel"' in json.dumps(pre_tokenizer)


def tokenize_words(
    tokenizer, sentences: list[list[str]], ids: list[str], chunk_size: int = 4096, progress=None
) -> TokenizedCorpus:
    """Tokenise pre-tokenised ``sentences`` (``ids`` name them in errors) with each token's word index."""
    backend = fast_backend(tokenizer)
    if marks_spaces(backend):
        sentences = [
            [word if position == 0 else " " + word for position, word in enumerate(words)] for words in sentences
        ]
    ids_parts, word_parts, subword_parts = [], [], []
    lengths = np.empty(len(sentences), dtype=np.int64)
    for start in range(0, len(sentences), chunk_size):
        chunk = sentences[start : start + chunk_size]
        encodings = backend.encode_batch(chunk, is_pretokenized=True, add_special_tokens=False)
        chunk_ids, chunk_words = [], []
        for offset, encoding in enumerate(encodings):
            processed = backend.post_process(encoding)
            words = np.fromiter((-1 if w is None else w for w in processed.word_ids), dtype=np.int32)
            counts = np.bincount(words[words >= 0], minlength=len(chunk[offset]))
            if len(counts) != len(chunk[offset]) or np.any(counts == 0):
                raise _empty_word_error(ids[start + offset], chunk[offset], counts[: len(chunk[offset])])
            lengths[start + offset] = len(processed.ids)
            chunk_ids.extend(processed.ids)
            chunk_words.append(words)
            subword_parts.append(counts.astype(np.int32))
        ids_parts.append(np.asarray(chunk_ids, dtype=np.int32))
        word_parts.extend(chunk_words)
        if progress is not None:
            progress.update(len(encodings))
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    word_offsets = np.r_[0, np.cumsum([len(words) for words in sentences])].astype(np.int64)
    return TokenizedCorpus(
        input_ids=np.concatenate(ids_parts) if ids_parts else np.zeros(0, np.int32),
        offsets=offsets,
        full_lengths=lengths.astype(np.int32),
        word_ids=np.concatenate(word_parts) if word_parts else np.zeros(0, np.int32),
        word_offsets=word_offsets,
        n_subwords=np.concatenate(subword_parts) if subword_parts else np.zeros(0, np.int32),
    )


def tokenize_input(loaded, corpus, plan, texts_tokenizer=None) -> TokenizedCorpus:
    """The tokenised corpus of a plan: word inputs pre-tokenised (never truncated), sentence pairs as ``pairs.py``
    and plain texts as ``texts_tokenizer`` (default ``tokenize.tokenize_texts``) do, once texts too long to
    matter are cut (``corpus.cut_long_texts``, in place: the file stores what was tokenised)."""
    from ..inputs.corpus import cut_long_texts
    from ..inputs.pairs import tokenize_corpus
    from ..inputs.prompts import prompt_tokens, with_positions
    from ..inputs.templates import uses_prompts
    from .tokenize import tokenize_texts

    if corpus.words is not None:
        return tokenize_words(loaded.tokenizer, corpus.words.sentences, corpus.ids)
    if uses_prompts(plan.config):  # rows made into prompts, cut in their text to fit (prompts.py)
        return prompt_tokens(loaded, corpus, plan)
    cut_long_texts(corpus, loaded.max_length, window=plan.window is not None)  # the stored texts are the cut ones
    tokenized = tokenize_corpus(
        plan.config,
        loaded.tokenizer,
        corpus,
        loaded.max_length,
        truncate=plan.window is None,
        texts_tokenizer=texts_tokenizer or tokenize_texts,
    )
    return with_positions(tokenized, plan.config, corpus, loaded)  # --pool-at last|index:N on plain texts
