"""What an arc bundle (``featx fit --arcs``) predicts from new sentences' word vectors, for ``Probe.predict`` and
``featx predict`` alike: a relation labeller labels each given (head, dependent) arc from
``[h_head, h_dep, h_head * h_dep]``; a head selector scores every word's candidate heads (every word of its
sentence, and the word itself standing for the root) and gives each sentence its best tree (``arc_tree``; a selector
of an earlier featx: each word its best-scoring candidate).

Heads are given and returned as CoNLL-U writes them: per sentence, each word's head position from 1, 0 the root.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..probing import arc_features
from .arc_plan import SELECTOR
from .arc_select import vector_width
from .arc_tree import ARGMAX
from .attach import select_heads

NO_HEADS_HINT = (
    "give gold heads: a CoNLL-U file (its HEAD column), --columns with a head field, or JSON Lines with 'head'; "
    "in Python, predict(sentences, heads=[[2, 0, 2], ...]); to predict the heads, fit --label head --arcs"
)


def flat_heads(heads: Any, offsets: np.ndarray) -> np.ndarray:
    """CoNLL-U heads given per sentence (from 1, 0 the root) as one array of 0-based heads within each sentence
    (-1 the root), checked against the sentences' lengths."""
    lengths = np.diff(np.asarray(offsets, np.int64))
    if not isinstance(heads, (list, tuple)) or len(heads) != len(lengths):
        got = f"{len(heads)} lists" if isinstance(heads, (list, tuple)) else f"a {type(heads).__name__}"
        raise InputError(f"heads: {got} for {len(lengths)} sentences", "give one list of heads per sentence")
    out = []
    for number, (given, length) in enumerate(zip(heads, lengths, strict=True)):
        values = list(given) if isinstance(given, (list, tuple, np.ndarray)) else None
        ok = values is not None and len(values) == length
        ok = ok and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values or [])
        if not ok or not all(0 <= int(v) <= length for v in values or []):
            raise InputError(
                f"heads[{number}] is not {length} whole numbers in 0..{length} (one per word of sentence {number})",
                "each word's head position from 1, 0 for the root",
            )
        out.append(np.asarray(values, np.int64) - 1)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def gold_arcs(offsets: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """``(n, 2)`` (head, dependent) word indices of every word with a head (the root's words have none)."""
    offsets, heads = np.asarray(offsets, np.int64), np.asarray(heads, np.int64)
    dependents = np.flatnonzero(heads >= 0)
    sentence = np.searchsorted(offsets, dependents, side="right") - 1
    return np.stack([offsets[sentence] + heads[dependents], dependents], axis=1)


def relation_scores(probe, states: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Class probabilities (margins for svm) of each arc in ``pairs``."""
    X = probe._checked(arc_features(states, pairs))
    return probe.head.proba(X) if probe.head.has_proba else probe.head.scores(X)


def predicted_heads(probe, states: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every word's predicted head (its position in the sentence from 1, 0 the root): its head in its sentence's
    best tree (``head_decode`` tree), or (a selector of an earlier featx) its best-scoring candidate; that head's
    margin (its score, comparable among one word's candidates only) and its probability among the word's
    candidates."""
    offsets = np.asarray(offsets, np.int64)
    words = np.arange(int(offsets[-1]))
    states = np.asarray(states, dtype=np.float32)
    bounds = probe.info.get("offset_buckets")  # None: a head selector of an earlier featx, [h_head, h_dep, product]
    width = vector_width(probe.head.n_features, bounds)
    if states.ndim != 2 or states.shape[1] != width or not np.isfinite(states).all():
        raise InputError(
            f"word vectors of shape {states.shape}: this head selector reads finite vectors of "
            f"{width} columns (layer {probe.spec.name}, pooling {probe.pooling})",
            "pass the word vectors of the bundle's layer and word pooling",
        )
    decode = probe.info.get("head_decode", ARGMAX)  # an earlier featx's selectors: each word's best head on its own
    heads, margins, probability = select_heads(probe.head, states, offsets, words, bounds, decode)
    return np.where(heads == words, 0, word_positions(offsets, heads)), margins, probability


def word_positions(offsets: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Each of ``words`` (word indices) as its position in its sentence, from 1."""
    return words - offsets[np.searchsorted(offsets, words, side="right") - 1] + 1


def predict_arcs(probe, sentences: Any, heads: Any = None, proba: bool = False, **overrides: Any) -> list:
    """Per sentence: a head selector's predicted heads (from 1, 0 the root); a relation labeller's relation of each
    word given its ``heads`` (None for a word of the root), or with ``proba`` its class probabilities (NaN rows)."""
    states, offsets = probe.word_features(sentences, **overrides)
    per_sentence = [slice(int(offsets[s]), int(offsets[s + 1])) for s in range(len(offsets) - 1)]
    if probe.arcs == SELECTOR:
        if proba:
            raise InputError("a head selector gives heads, not class probabilities", "use predict")
        if heads is not None:
            raise InputError("a head selector predicts the heads: it takes none", "leave heads= out")
        positions = predicted_heads(probe, states, offsets)[0]
        return [positions[part] for part in per_sentence]
    if heads is None:
        raise InputError("this relation labeller labels given (head, dependent) arcs, and got no heads", NO_HEADS_HINT)
    pairs = gold_arcs(offsets, flat_heads(heads, offsets))
    scores = relation_scores(probe, states, pairs)
    out: np.ndarray
    if proba:
        out = np.full((len(states), len(probe.classes)), np.nan)
        out[pairs[:, 1]] = scores
    else:
        out = np.full(len(states), None, dtype=object)
        out[pairs[:, 1]] = np.asarray(probe.classes, dtype=object)[np.argmax(scores, axis=1)]
    return [out[part] for part in per_sentence]


__all__ = [
    "NO_HEADS_HINT",
    "flat_heads",
    "gold_arcs",
    "predict_arcs",
    "predicted_heads",
    "relation_scores",
    "word_positions",
]
