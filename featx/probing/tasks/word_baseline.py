"""``--baseline`` for word-level probes: a second features file of the same sentences and words (a random-init
model, another model), probed with the same items, folds and classifiers; its rows sit beside the model's
(``features`` = ``baseline``), with their own chosen layer and paired tests between its layers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ... import store
from ...errors import InputError
from ...store import FeatureFile
from ..baseline_checks import check_baseline, same_options_hint

SAME_WORDS_HINT = "extract the baseline from the same word input files, e.g. featx extract FILES --random-init"


def check_word_baseline(main: Any, path: str | Path, layers: list[int], poolings: list[str], partial: bool) -> str:
    """Fail unless the ``--baseline`` file at ``path`` holds the rows (count, corpus, ids) and words of
    ``main``, the probed layers and word poolings; its model (``(random init)`` marked)."""
    with FeatureFile(path, allow_partial=partial) as other:
        if not other.has_words:
            raise InputError(f"--baseline {other.path} has no word-level data", SAME_WORDS_HINT)
        if isinstance(main, FeatureFile):  # an in-memory source (tests) has no corpus records
            check_baseline(main, other, [], [], False)
        _check_same_words(main, other)
        missing = sorted(set(layers) - set(other.layers))
        if missing:
            raise InputError(
                f"--baseline {other.path} does not store layer(s) {missing}; it stores {other.layers}",
                same_options_hint("layer", sorted(set(layers) & set(other.layers))),
            )
        absent = [pooling for pooling in poolings if pooling not in other.word_poolings()]
        if absent:
            raise InputError(
                f"--baseline {other.path} does not store word pooling(s) {', '.join(absent)}",
                "extract it with the same --word-pooling, or probe the poolings both store with --pooling",
            )
        model = str(other.attrs.get(store.schema.MODEL))
        return f"{model} (random init)" if other.attrs.get(store.schema.RANDOM_INIT) else model


def _check_same_words(main: Any, other: FeatureFile) -> None:
    offsets, theirs = np.asarray(main.word_offsets(), np.int64), other.word_offsets()
    if len(offsets) != len(theirs):
        counts = f"{len(theirs) - 1} there, {len(offsets) - 1} here"
        raise InputError(f"--baseline {other.path} does not hold the same sentences: {counts}", SAME_WORDS_HINT)
    forms, their_forms = main.word_forms(), other.word_forms()
    differ = np.flatnonzero(offsets != theirs)
    if not len(differ) and list(forms) == list(their_forms):
        return
    sentence = int(differ[0]) - 1 if len(differ) else _first_sentence(offsets, forms, their_forms)
    raise InputError(
        f"--baseline {other.path} does not hold the same words: sentence {sentence} (row {sentence}) differs",
        SAME_WORDS_HINT,
    )


def _first_sentence(offsets: np.ndarray, forms: list[str], theirs: list[str]) -> int:
    word = next(i for i, (a, b) in enumerate(zip(forms, theirs, strict=True)) if a != b)
    return int(np.searchsorted(offsets, word, side="right")) - 1
