"""``encode_words``: the word vectors of in-memory sentences, without a features file.

A sentence is a list of words (or a string, split on whitespace). They run through the in-memory pipeline
(``pipeline.py``) as a word input does in ``featx extract`` (pre-tokenised, every subword of every word kept, long
sentences in windows): the vectors are bit for bit what the features file stores for the same words and options,
and the pass stops after the highest layer asked for. ``WordVectors`` holds them.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ...store import HEAD_UNKNOWN
from ..config import ExtractConfig
from ..inputs.treebank import WordTable
from .pipeline import IN_MEMORY, memory_corpus, run_in_memory

WORD_FORMAT = "jsonl"  # how an in-memory request reads: sentences of given words, as JSON Lines of tokens


def as_sentences(sentences, name: str = "sentences") -> list[list[str]]:
    """``sentences`` as lists of words: each item a list (or tuple) of strings, or a string split on whitespace."""
    if isinstance(sentences, (str, bytes)) or not isinstance(sentences, (list, tuple)):
        raise InputError(
            f"{name} is a {type(sentences).__name__}, not a list of sentences",
            'give a list of sentences, each a list of words (["The", "cat"]) or a string split on spaces',
        )
    out = []
    for number, sentence in enumerate(sentences):
        words = sentence.split() if isinstance(sentence, str) else sentence
        if not isinstance(words, (list, tuple)) or not all(isinstance(word, str) for word in words):
            raise InputError(
                f"{name}[{number}] is a {type(sentence).__name__}, not a list of words or a string",
                "give each sentence as a list of strings, or a string of words separated by spaces",
            )
        if not words or any(not word.strip() for word in words):
            raise InputError(
                f"{name}[{number}] has no words" if not words else f"{name}[{number}] has an empty word",
                "every sentence needs at least one word, and every word a visible character",
            )
        out.append(list(words))
    return out


def word_config(**options) -> ExtractConfig:
    """The ``ExtractConfig`` of an in-memory word request (its corpus is ``IN_MEMORY``)."""
    return ExtractConfig(corpus=IN_MEMORY, word_format=WORD_FORMAT, **options)


def sentences_table(sentences: list[list[str]]) -> WordTable:
    """The ``WordTable`` of sentences given as lists of words: no heads, no labels."""
    offsets = np.r_[0, np.cumsum([len(words) for words in sentences])].astype(np.int64)
    forms = [word for words in sentences for word in words]
    return WordTable(offsets, forms, np.full(len(forms), HEAD_UNKNOWN, dtype=np.int32), {})


class WordVectors:
    """Word vectors of in-memory sentences: ``array(layer, pooling)`` is a float32 ``(words, width)`` array, the
    words of every sentence in order (sentence ``s`` owns ``word_offsets[s]:word_offsets[s+1]``)."""

    def __init__(self, arrays: dict, plan, word_offsets: np.ndarray, model: dict):
        from ... import store

        self._arrays = {name: arrays[store.schema.word_pooled_path(name)] for name in plan.word_poolings}
        self.layers = list(plan.hidden.layers)
        self.word_offsets = word_offsets
        self.model = model

    @property
    def poolings(self) -> list[str]:
        return list(self._arrays)

    def array(self, layer: int, pooling: str) -> np.ndarray:
        """The ``(words, width)`` float32 vectors of one stored layer and word pooling (first, last, mean)."""
        if pooling not in self._arrays or int(layer) not in self.layers:
            raise InputError(
                f"layer {layer}, word pooling '{pooling}' was not encoded",
                f"these vectors hold layers {self.layers} and word poolings {', '.join(self._arrays)}",
            )
        values = self._arrays[pooling][:, self.layers.index(int(layer))]
        return np.ascontiguousarray(values, dtype=np.float32)


def encode_words(loaded, config: ExtractConfig, sentences: list[list[str]]) -> WordVectors:
    """Run ``config``'s extraction of checked ``sentences`` (``as_sentences``) with a loaded model, into memory."""
    keys = ["\x1f".join(words) for words in sentences]
    corpus = memory_corpus([" ".join(words) for words in sentences], keys, words=sentences_table(sentences))
    run = run_in_memory(loaded, config, corpus)
    assert run.word_offsets is not None  # word inputs have word offsets
    return WordVectors(run.arrays, run.plan, run.word_offsets, run.model)


__all__ = ["WordVectors", "as_sentences", "encode_words", "sentences_table", "word_config"]
