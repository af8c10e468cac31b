"""The metric a run is judged in (``--metric``) and the choice of its best probe on training rows only.

``Scoring`` holds the metric and scores predictions in it: a fold's test rows, the held-out part of each
training part (``selection``: the inner holdout or the dev rows that also chose C / alpha; its mean over
the outer folds is a row's ``selection_score``, the score the best layer, pooling and classifier are
chosen on), the control task, and paired tests between two probes on the same test rows. The test rows
only ever score: the best row is never the argmax of a test score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...options import spoken_value
from . import regression_metrics as rm
from . import significance
from .metrics import confusion, metrics_from_confusion

CLASSIFICATION_METRICS = ("accuracy", "macro_f1", "balanced_accuracy")
REGRESSION_METRICS = ("r2", "pearson", "spearman")
METRICS = CLASSIFICATION_METRICS + REGRESSION_METRICS
CONFUSION_CELLS = 4_000_000  # per-unit confusion shifts held at once by the paired permutation test (else row by row)
SCORE_DECIMALS = 12  # a mean over folds that a choice compares, rounded: means equal but for float rounding tie


def fold_mean(values) -> float:
    """The mean of fold scores that a choice compares (``selection_score``, featx fit's candidates), rounded to
    ``SCORE_DECIMALS``: accuracies (0.5, 0.5, 0.65) and (0.55, 0.55, 0.55) both give 0.55, so they tie and the
    tie goes to the earlier row as documented (np.mean gives the first 0.5499999999999999)."""
    return round(float(np.mean(values)), SCORE_DECIMALS)


def check_metric(metric: str | None, regression: bool, label: str = "") -> str:
    """The metric of a run: ``metric`` (None: accuracy, or R² for a regression label) when it fits the
    task, else an ``InputError`` (before any probe is fitted)."""
    fitting = REGRESSION_METRICS if regression else CLASSIFICATION_METRICS
    if metric is None:
        return fitting[0]
    name = str(metric).strip().lower()
    if name in fitting:
        return name
    what = f"'{label}' is probed as a number (regression)" if regression else f"'{label}' is probed as classes"
    if name not in METRICS:
        raise InputError(f"{_metric(metric)} is not known", f"choose one of {', '.join(fitting)}")
    raise InputError(f"{_metric(name)} does not fit this label: {what}", f"choose one of {', '.join(fitting)}")


def _metric(name: object) -> str:
    """``--metric r2`` on the command line, ``metric='r2'`` from Python (``options.spoken_value``)."""
    return spoken_value(None, "metric", name, "--metric")


@dataclass(frozen=True)
class Scoring:
    """Scores predictions in one metric (classification: ``n_classes`` classes coded 0..k-1)."""

    metric: str = "accuracy"
    n_classes: int = 0

    @property
    def regression(self) -> bool:
        return self.metric in REGRESSION_METRICS

    def value(self, y_true: np.ndarray, y_pred: np.ndarray) -> float:
        """The metric of ``y_pred`` against ``y_true`` (NaN for no rows)."""
        if not len(y_true):
            return float("nan")
        if self.regression:
            return float(rm.metrics(y_true, y_pred)[self.metric])
        cm = confusion(np.asarray(y_true, np.int64), np.asarray(y_pred, np.int64), self.n_classes)
        return float(metrics_from_confusion(cm)[self.metric])

    def selection(self, y: np.ndarray, folds: list) -> float:
        """The mean over the outer folds of the metric on each training part's held-out rows (NaN when the
        probe holds none out: it takes no part in the choice)."""
        parts = [fold.validation for fold in folds if getattr(fold, "validation", None) is not None]
        values = [self.value(y[rows], predicted) for rows, predicted in parts]
        finite = [value for value in values if np.isfinite(value)]
        return fold_mean(finite) if finite and len(parts) == len(folds) else float("nan")

    def over_folds(self, y: np.ndarray, plan, folds: list) -> float:
        """The mean over the outer folds of the metric on their test rows (the control task's score)."""
        return float(
            np.mean([self.value(y[test], fold.predictions) for (_, test), fold in zip(plan.folds, folds, strict=False)])
        )

    def p_value(self, plan, y: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray, n_boot: int, seed: int) -> float:
        """The paired test of a against b on the same test rows, in this metric (predictions per labelled
        row): per fold under k-fold (corrected resampled t-test), else a paired randomisation test over the test
        rows (whole sentences for word probes, groups with ``--group``): accuracy and R² are sums over rows,
        so the rows' differences flip sign (``significance.paired_sign_flip``: exact for accuracy, McNemar's over
        rows, every sign pattern counted over groups); the other metrics swap a's and b's predictions of a row
        (``_swap_test``)."""
        if self.metric == "accuracy":
            return significance.paired_p_value(plan, y, pred_a, pred_b, n_boot, seed)
        if self.metric == "r2":  # on the same rows R² differences are squared-error differences
            return significance.paired_p_value(plan, y, pred_a, pred_b, n_boot, seed, score=rm.neg_squared_error)
        if not plan.is_split:
            scores_a = [self.value(y[test], pred_a[test]) for _, test in plan.folds]
            scores_b = [self.value(y[test], pred_b[test]) for _, test in plan.folds]
            n_train = float(np.mean([len(train) for train, _ in plan.folds]))
            n_test = float(np.mean([len(test) for _, test in plan.folds]))
            return significance.corrected_t_test(scores_a, scores_b, n_train, n_test)
        test = plan.folds[0][1]
        groups = getattr(plan, "groups", None)
        groups = None if groups is None else groups[test]
        return self._swap_test(y[test], pred_a[test], pred_b[test], n_boot, seed, groups)

    def _swap_test(self, y, pred_a, pred_b, n_boot: int, seed: int, groups) -> float:
        """Two-sided p-value of metric(a) - metric(b) from the paired permutation test: under the null a's and b's
        predictions of a row (or of a whole group) are exchangeable, so each unit's two predictions are swapped
        or not. Every pattern of the units where a and b differ is scored (``significance.sign_patterns``), else
        ``n_boot`` random ones with the Monte Carlo (b + 1) / (B + 1); swapping elsewhere changes nothing."""
        observed = self.value(y, pred_a) - self.value(y, pred_b)
        if np.array_equal(pred_a, pred_b) or not np.isfinite(observed):
            return 1.0
        unit = np.unique(groups, return_inverse=True)[1].ravel() if groups is not None else np.arange(len(y))
        differing = np.unique(unit[pred_a != pred_b])
        position = np.full(int(unit.max()) + 1, -1)
        position[differing] = np.arange(len(differing))
        row_unit, m = position[unit], len(differing)  # each row's swapped unit (-1: never swapped)
        k2 = self.n_classes**2
        by_confusion = not self.regression and m * k2 <= CONFUSION_CELLS
        width, most = (k2, significance.EXACT_UNITS) if by_confusion else (len(y), _exact_rows(n_boot))
        exact, chunks = significance.sign_patterns(m, n_boot, seed, width, most)
        swapped = self._swapped_confusions if by_confusion else self._swapped_rows
        extreme = total = 0
        for patterns in chunks:
            differences = swapped(y, pred_a, pred_b, row_unit, patterns)
            differences = differences[np.isfinite(differences)]
            extreme += int(np.count_nonzero(np.abs(differences) >= abs(observed) - 1e-12))
            total += len(differences)
        return significance.randomisation_p(extreme, total, exact) if total else 1.0

    def _swapped_rows(self, y, pred_a, pred_b, row_unit, patterns) -> np.ndarray:
        """The metric difference of each pattern from its swapped predictions: a regression metric over a (patterns,
        rows) stack at once, a classification metric one pattern at a time."""
        swap = (row_unit >= 0)[None, :] & (patterns[:, np.maximum(row_unit, 0)] == 1)
        a, b = np.where(swap, pred_b, pred_a), np.where(swap, pred_a, pred_b)
        if self.regression:
            return rm.metrics(y, a)[self.metric] - rm.metrics(y, b)[self.metric]
        return np.array([self.value(y, row_a) - self.value(y, row_b) for row_a, row_b in zip(a, b, strict=True)])

    def _swapped_confusions(self, y, pred_a, pred_b, row_unit, patterns) -> np.ndarray:
        """The metric difference of each pattern from confusion counts: swapping unit u moves a's confusion matrix
        by u's (b - a) cells and b's by the opposite, many patterns at a time."""
        k, m = self.n_classes, patterns.shape[1]
        cell_a = np.asarray(y, np.int64) * k + np.asarray(pred_a, np.int64)
        cell_b = np.asarray(y, np.int64) * k + np.asarray(pred_b, np.int64)
        base_a, base_b = (np.bincount(cell, minlength=k * k).astype(np.float64) for cell in (cell_a, cell_b))
        moved = np.zeros((m, k * k))
        rows = row_unit >= 0
        np.add.at(moved, (row_unit[rows], cell_b[rows]), 1.0)
        np.add.at(moved, (row_unit[rows], cell_a[rows]), -1.0)
        shift = patterns.astype(np.float64) @ moved
        a, b = ((base + sign * shift).reshape(-1, k, k) for base, sign in ((base_a, 1.0), (base_b, -1.0)))
        return metrics_from_confusion(a)[self.metric] - metrics_from_confusion(b)[self.metric]


def _exact_rows(n_boot: int) -> int:
    """The most units whose every swap pattern is scored one by one: 2^m within ``n_boot`` (and ``EXACT_UNITS``)."""
    return min(significance.EXACT_UNITS, max(int(np.log2(max(n_boot, 1))), 0))
