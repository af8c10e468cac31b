"""The metrics of a classification probe: confusion matrices, accuracy, macro-F1 and balanced accuracy,
their 95% intervals (Student-t over folds, or a bootstrap of a fixed test split: of its rows, or of whole
sentences for word and arc probes), and ``summarise``, the metric columns of one results row.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .plans import FoldResult, Plan


def confusion(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    return np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def metrics_from_confusion(cm: np.ndarray) -> dict[str, np.ndarray]:
    """accuracy, macro-F1 and balanced accuracy of one (k, k) or many (B, k, k) confusion matrices.

    Classes with no true rows are left out of balanced accuracy, and classes with neither true nor
    predicted rows out of macro-F1 (as scikit-learn does).
    """
    cm = np.asarray(cm, dtype=np.float64)
    return metrics_from_counts(np.diagonal(cm, axis1=-2, axis2=-1), cm.sum(axis=-1), cm.sum(axis=-2))


def metrics_from_counts(tp: np.ndarray, true: np.ndarray, pred: np.ndarray) -> dict[str, np.ndarray]:
    """``metrics_from_confusion``'s scores from per-class true-positive, true and predicted counts (..., k),
    which is all of a confusion matrix they read (a resample of groups weights its groups' counts)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = tp.sum(axis=-1) / true.sum(axis=-1)
        recall = np.where(true > 0, tp / true, np.nan)
        f1 = np.where(true + pred > 0, 2 * tp / (true + pred), np.nan)
        balanced = np.nanmean(recall, axis=-1)
        macro_f1 = np.nanmean(f1, axis=-1)
    return {"accuracy": accuracy, "macro_f1": macro_f1, "balanced_accuracy": balanced, "per_class_f1": f1}


def t_interval(values: ArrayLike) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval of per-fold scores."""
    from scipy import stats

    scores = np.asarray(values, dtype=np.float64)
    mean = float(scores.mean())
    if len(scores) < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(scores) - 1) * scores.std(ddof=1) / np.sqrt(len(scores)))
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def bootstrap_intervals(
    y_true, y_pred, n_classes: int, n_boot: int, seed: int, groups: np.ndarray | None = None
) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of each metric over resamples of the fixed test set: of its rows, or with
    ``groups`` (the sentence of each word or arc) of whole groups, the unit that was sampled."""
    if groups is not None:
        return _group_bootstrap(y_true, y_pred, groups, n_classes, n_boot, seed)
    rng = np.random.default_rng(seed)
    codes = y_true * n_classes + y_pred
    n, k2 = len(codes), n_classes * n_classes
    intervals: dict[str, list] = {"accuracy": [], "macro_f1": [], "balanced_accuracy": []}
    chunk = max(1, min(n_boot, 4_000_000 // max(1, n)))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        sample = codes[rng.integers(0, n, size=(size, n))]
        offset = (sample + np.arange(size)[:, None] * k2).ravel()
        cms = np.bincount(offset, minlength=size * k2).reshape(size, n_classes, n_classes)
        values = metrics_from_confusion(cms)
        for name in intervals:
            intervals[name].append(values[name])
    return _percentiles(intervals)


def _percentiles(resamples: dict[str, list]) -> dict[str, tuple[float, float]]:
    out = {}
    for name, parts in resamples.items():
        resampled = np.concatenate(parts)
        out[name] = (float(np.nanpercentile(resampled, 2.5)), float(np.nanpercentile(resampled, 97.5)))
    return out


def _group_counts(y, pred, groups, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G, k) true-positive, true and predicted counts per group."""
    _, group = np.unique(groups, return_inverse=True)
    n = int(group.max()) + 1 if len(group) else 0
    tp, true, predicted = (np.zeros((n, n_classes)) for _ in range(3))
    np.add.at(true, (group, y), 1)
    np.add.at(predicted, (group, pred), 1)
    hit = y == pred
    np.add.at(tp, (group[hit], y[hit]), 1)
    return tp, true, predicted


def _group_bootstrap(y, pred, groups, n_classes: int, n_boot: int, seed: int) -> dict[str, tuple[float, float]]:
    """The intervals over resampled whole groups: a resample's counts are its groups' counts weighted by
    how often each was drawn, many resamples at a time."""
    y, pred = np.asarray(y, np.int64), np.asarray(pred, np.int64)
    tp, true, predicted = _group_counts(y, pred, groups, n_classes)
    rng = np.random.default_rng(seed)
    n = len(tp)
    out: dict[str, list] = {"accuracy": [], "macro_f1": [], "balanced_accuracy": []}
    chunk = max(1, min(n_boot, 2_000_000 // max(1, n)))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        drawn = (np.arange(size)[:, None] * n + rng.integers(0, n, size=(size, n))).ravel()
        weights = np.bincount(drawn, minlength=size * n).reshape(size, n).astype(np.float64)
        values = metrics_from_counts(weights @ tp, weights @ true, weights @ predicted)
        for name in out:
            out[name].append(values[name])
    return _percentiles(out)


def summarise(plan: Plan, y: np.ndarray, folds: list[FoldResult], n_classes: int, n_boot: int, seed: int) -> dict:
    """The metric columns of one results row from the per-fold predictions."""
    row: dict = {}
    per_fold = [
        confusion(y[test], result.predictions, n_classes) for (_, test), result in zip(plan.folds, folds, strict=False)
    ]
    pooled = np.sum(per_fold, axis=0)
    pooled_metrics = metrics_from_confusion(pooled)
    if plan.is_split:
        test = plan.folds[0][1]
        groups = getattr(plan, "groups", None)  # word plans: resample whole test sentences
        bounds = bootstrap_intervals(
            y[test], folds[0].predictions, n_classes, n_boot, seed, None if groups is None else groups[test]
        )
        for name in ("accuracy", "macro_f1", "balanced_accuracy"):
            row[name] = float(pooled_metrics[name])
            row[f"{name}_low"], row[f"{name}_high"] = bounds[name]
    else:
        fold_metrics = [metrics_from_confusion(cm) for cm in per_fold]
        for name in ("accuracy", "macro_f1", "balanced_accuracy"):
            row[name], row[f"{name}_low"], row[f"{name}_high"] = t_interval([m[name] for m in fold_metrics])
    row["per_class_f1"] = pooled_metrics["per_class_f1"]
    row["n_train"] = int(round(np.mean([len(train) for train, _ in plan.folds])))
    row["n_test"] = int(sum(len(test) for _, test in plan.folds))
    row["fit_seconds"] = float(sum(result.fit_seconds for result in folds))
    cs = [result.C for result in folds if np.isfinite(result.C)]
    row["C"] = float(np.median(cs)) if cs else float("nan")
    weights = [result.layer_weights for result in folds if result.layer_weights is not None]
    row["layer_weights"] = np.mean(weights, axis=0) if weights else None
    return row
