"""Fitting word-level probes: one outer fold at a time, inner holdouts by sentence. Their metric intervals
are ``evaluation.summarise``'s, which resamples whole test sentences (the unit that was sampled, not the
word) because a word plan carries each item's sentence."""

from __future__ import annotations

import time

import numpy as np

from .. import evaluation as ev
from ..solvers import classifiers as clf
from .word_fit import fit_logreg_words, standardised
from .word_items import WordTask


def item_features(task: WordTask, layer_states: np.ndarray) -> np.ndarray:
    """The probe input of every item from one layer's ``(n_words, H)`` word vectors: the word's vector,
    or ``[h_head, h_dep, h_head * h_dep]`` for an arc item."""
    if task.words.ndim == 1:
        if len(task.words) == len(layer_states) and np.array_equal(task.words, np.arange(len(layer_states))):
            return np.ascontiguousarray(layer_states, dtype=np.float32)  # every word is an item: no copy
        return np.ascontiguousarray(layer_states[task.words], dtype=np.float32)
    return arc_features(layer_states, task.words)


def arc_features(layer_states: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``[h_head, h_dep, h_head * h_dep]`` (float32) of each ``(head, dependent)`` pair of word indices into
    ``layer_states`` (a pair of a word with itself: the root as its head): what an arc probe reads, in featx
    probe and in featx fit's and featx predict's arc bundles alike."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    head = np.asarray(layer_states[pairs[:, 0]], dtype=np.float32)
    dependent = np.asarray(layer_states[pairs[:, 1]], dtype=np.float32)
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
    results = []
    for y in labels:
        begun = time.perf_counter()
        parts = (train, dev, n_classes, cs, balanced, seed, groups)
        model, scaler, C, validation = fit_word_head(classifier, X, y, *parts)
        predictions = word_head_predictions(model, scaler, X, test)
        results.append(ev.FoldResult(predictions, C, time.perf_counter() - begun, validation=validation))
    return results


def fit_word_head(classifier: str, X, y, train, dev, n_classes: int, cs, balanced: bool, seed: int, groups):
    """An svm or mlp word probe fitted on the items ``train`` of ``X``: featx probe's word probes and featx fit's word
    heads both fit through here, so that one holdout and one C give one head. The scaler is fitted on ``train``; an
    svm's C is chosen, or the mlp early-stopped, on the ``dev`` items (the val sentences' words) when given, else on
    a holdout of whole training sentences (``groups``: each item's sentence; ``evaluation.inner_split``, stratified
    by class as far as whole sentences allow); the svm is then refitted on the whole of ``train`` at that C (the mlp
    keeps the weights of its best epoch). Returns ``(model, scaler, C, validation)`` as ``evaluation.fit_linear``:
    the mlp's model is its torch module, its C NaN; ``validation`` the held-out items and their predictions.
    (A logreg word probe batches the real labels and the control task's: ``word_fit.fit_logreg_words``.)"""
    if classifier == "mlp":
        model, scaler, Xs, val_rows = ev.fit_mlp(X, y, train, dev, n_classes, balanced, seed, groups)
        held_out = clf.head_scores(model, lambda rows: Xs[rows], val_rows).argmax(axis=1)
        return model, scaler, float("nan"), (val_rows, held_out)
    if classifier != "svm":
        raise ValueError(f"fit_word_head fits svm and mlp word probes, not {classifier!r}")
    return ev.fit_linear(classifier, X, y, train, dev, cs, balanced, seed, groups)


def word_head_predictions(model, scaler: ev.Scaler, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The class codes ``fit_word_head``'s model predicts for the items ``rows`` of ``X``."""
    if not hasattr(model, "predict"):  # the mlp's torch module
        import torch

        inputs = lambda batch: torch.from_numpy(np.ascontiguousarray(scaler(X[batch])))  # noqa: E731
        return clf.head_scores(model, inputs, rows).argmax(axis=1)
    return model.predict(scaler(X[rows]))
