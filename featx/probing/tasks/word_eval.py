"""Fitting word-level probes: one outer fold at a time, inner holdouts by sentence. Their metric intervals
are ``evaluation.summarise``'s, which resamples whole test sentences (the unit that was sampled, not the
word) because a word plan carries each item's sentence."""

from __future__ import annotations

import time

import numpy as np

from .. import evaluation as ev
from .word_fit import fit_logreg_words, standardised
from .word_items import WordTask


def item_features(task: WordTask, layer_states: np.ndarray) -> np.ndarray:
    """The probe input of every item from one layer's ``(n_words, H)`` word vectors: the word's vector,
    or ``[h_head, h_dep, h_head * h_dep]`` for an arc item."""
    if task.words.ndim == 1:
        if len(task.words) == len(layer_states) and np.array_equal(task.words, np.arange(len(layer_states))):
            return np.ascontiguousarray(layer_states, dtype=np.float32)  # every word is an item: no copy
        return np.ascontiguousarray(layer_states[task.words], dtype=np.float32)
    head = layer_states[task.words[:, 0]].astype(np.float32)
    dependent = layer_states[task.words[:, 1]].astype(np.float32)
    return np.concatenate([head, dependent, head * dependent], axis=1)


def run_fold(
    classifier: str,
    X: np.ndarray,
    labels: list[np.ndarray],
    train,
    test,
    dev,
    groups,
    n_classes: int,
    cs,
    balanced: bool,
    seed: int,
) -> list[ev.FoldResult]:
    """One outer fold for each label vector (the real labels, then the control task's)."""
    started = time.perf_counter()
    if classifier == "logreg":
        fitted = fit_logreg_words(X, labels, train, dev, groups, n_classes, cs, balanced, seed)
        X_test = standardised(X, test, fitted[0][1])
        seconds = (time.perf_counter() - started) / len(labels)
        return [
            ev.FoldResult(model.predict(X_test), C, seconds, validation=validation)
            for model, _, C, validation in fitted
        ]
    if dev is None:  # svm's C search and the MLP's early stopping hold out whole training sentences, stratified
        train, dev = ev.inner_split(labels[0], train, seed, groups)  # as featx fit's word heads do
    results = []
    for y in labels:
        begun = time.perf_counter()
        if classifier == "mlp":
            result = ev.run_mlp(X, y, train, test, dev, n_classes, balanced, seed)
        else:
            model, scaler, C, validation = ev.fit_linear(classifier, X, y, train, dev, cs, balanced, seed)
            result = ev.FoldResult(model.predict(scaler(X[test])), C, 0.0, validation=validation)
        result.fit_seconds = time.perf_counter() - begun
        results.append(result)
    return results
