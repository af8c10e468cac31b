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
from . import regression_metrics as rm
from . import significance
from .metrics import confusion, metrics_from_confusion

CLASSIFICATION_METRICS = ("accuracy", "macro_f1", "balanced_accuracy")
REGRESSION_METRICS = ("r2", "pearson", "spearman")
METRICS = CLASSIFICATION_METRICS + REGRESSION_METRICS
CONFUSION_CELLS = 4_000_000  # per-unit confusion counts held at once by the paired bootstrap (else row by row)
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
        raise InputError(f"--metric {metric} is not known", f"choose one of {', '.join(fitting)}")
    raise InputError(f"--metric {name} does not fit this label: {what}", f"choose one of {', '.join(fitting)}")


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
        row): per fold under k-fold (corrected resampled t-test), else a paired bootstrap of the test rows
        (whole sentences for word probes)."""
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
        return self._bootstrap(
            y[test], pred_a[test], pred_b[test], n_boot, seed, None if groups is None else groups[test]
        )

    def _bootstrap(self, y, pred_a, pred_b, n_boot: int, seed: int, groups) -> float:
        """Two-sided p-value of metric(a) - metric(b) over resamples of the rows (or of whole ``groups``),
        by the shift method of ``significance.paired_bootstrap``."""
        observed = self.value(y, pred_a) - self.value(y, pred_b)
        if np.array_equal(pred_a, pred_b) or not np.isfinite(observed):
            return 1.0
        rng = np.random.default_rng(seed)
        unit = np.unique(groups, return_inverse=True)[1] if groups is not None else np.arange(len(y))
        n_units = int(unit.max()) + 1
        if self.regression or n_units * self.n_classes**2 > CONFUSION_CELLS:
            differences = self._resampled_rows(y, pred_a, pred_b, unit, n_units, n_boot, rng)
        else:
            differences = self._resampled_confusions(y, pred_a, pred_b, unit, n_units, n_boot, rng)
        differences = differences[np.isfinite(differences)]
        extreme = np.count_nonzero(np.abs(differences - observed) >= abs(observed) - 1e-12)
        return float((extreme + 1) / (len(differences) + 1))

    def _resampled_rows(self, y, pred_a, pred_b, unit, n_units: int, n_boot: int, rng) -> np.ndarray:
        """The metric difference of each resample, the resampled rows gathered one resample at a time."""
        positions, differences = np.arange(len(y)), np.empty(n_boot)
        for b in range(n_boot):
            counts = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
            rows = np.repeat(positions, counts[unit])
            differences[b] = self.value(y[rows], pred_a[rows]) - self.value(y[rows], pred_b[rows])
        return differences

    def _resampled_confusions(self, y, pred_a, pred_b, unit, n_units: int, n_boot: int, rng) -> np.ndarray:
        """The metric difference of each resample from per-unit confusion counts (a resample's confusion
        matrix is its units' counts weighted by how often each was drawn), many resamples at a time."""
        k2 = self.n_classes**2
        cells = [np.zeros((n_units, k2)) for _ in range(2)]
        for cell, pred in zip(cells, (pred_a, pred_b), strict=True):
            np.add.at(cell, (unit, np.asarray(y, np.int64) * self.n_classes + np.asarray(pred, np.int64)), 1.0)
        parts, chunk = [], max(1, CONFUSION_CELLS // max(n_units, k2))
        for start in range(0, n_boot, chunk):
            size = min(chunk, n_boot - start)
            drawn = (np.arange(size)[:, None] * n_units + rng.integers(0, n_units, (size, n_units))).ravel()
            weights = np.bincount(drawn, minlength=size * n_units).reshape(size, n_units).astype(np.float64)
            a, b = ((weights @ cell).reshape(size, self.n_classes, self.n_classes) for cell in cells)
            parts.append(metrics_from_confusion(a)[self.metric] - metrics_from_confusion(b)[self.metric])
        return np.concatenate(parts)
