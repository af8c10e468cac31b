"""Fitting and scoring word-level probes: one outer fold at a time, inner holdouts by sentence, and
metric intervals from a bootstrap over sentences (the unit that was sampled, not the word)."""

from __future__ import annotations

import time

import numpy as np

from .. import evaluation as ev
from .word_fit import fit_logreg_words, standardised
from .word_items import WordPlan, WordTask, inner_split_by_sentence


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
    if dev is None:  # svm's C search and the MLP's early stopping hold out whole training sentences
        train, dev = inner_split_by_sentence(groups, train, seed)
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


# -- intervals over sentences -------------------------------------------------------------------------
def _per_sentence_counts(y, pred, groups, n_classes):
    """(S, k) true-positive, true and predicted counts per test sentence."""
    _, sentence = np.unique(groups, return_inverse=True)
    n = sentence.max() + 1 if len(sentence) else 0
    tp, true, predicted = (np.zeros((n, n_classes)) for _ in range(3))
    np.add.at(true, (sentence, y), 1)
    np.add.at(predicted, (sentence, pred), 1)
    hit = y == pred
    np.add.at(tp, (sentence[hit], y[hit]), 1)
    return tp, true, predicted


def _metrics(tp, true, predicted) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = tp.sum(axis=-1) / true.sum(axis=-1)
        recall = np.where(true > 0, tp / true, np.nan)
        f1 = np.where(true + predicted > 0, 2 * tp / (true + predicted), np.nan)
        return {
            "accuracy": accuracy,
            "macro_f1": np.nanmean(f1, axis=-1),
            "balanced_accuracy": np.nanmean(recall, axis=-1),
        }


def sentence_bootstrap(y, pred, groups, n_classes: int, n_boot: int, seed: int) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of accuracy, macro-F1 and balanced accuracy over resampled test sentences."""
    tp, true, predicted = _per_sentence_counts(y, pred, groups, n_classes)
    rng = np.random.default_rng(seed)
    n = len(tp)
    out: dict[str, list] = {"accuracy": [], "macro_f1": [], "balanced_accuracy": []}
    chunk = max(1, min(n_boot, 2_000_000 // max(1, n)))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        drawn = (np.arange(size)[:, None] * n + rng.integers(0, n, size=(size, n))).ravel()
        weights = np.bincount(drawn, minlength=size * n).reshape(size, n).astype(np.float64)
        values = _metrics(weights @ tp, weights @ true, weights @ predicted)
        for name in out:
            out[name].append(values[name])
    return {
        name: (
            float(np.nanpercentile(np.concatenate(parts), 2.5)),
            float(np.nanpercentile(np.concatenate(parts), 97.5)),
        )
        for name, parts in out.items()
    }


def summarise(
    plan: WordPlan, y: np.ndarray, folds: list[ev.FoldResult], n_classes: int, n_boot: int, seed: int
) -> dict:
    """``evaluation.summarise``'s row, with the intervals of a split taken over test sentences."""
    row = ev.summarise(plan, y, folds, n_classes, 1 if plan.is_split else n_boot, seed)
    if plan.is_split:
        test = plan.folds[0][1]
        bounds = sentence_bootstrap(y[test], folds[0].predictions, plan.groups[test], n_classes, n_boot, seed)
        for name, (low, high) in bounds.items():
            row[f"{name}_low"], row[f"{name}_high"] = low, high
    return row
