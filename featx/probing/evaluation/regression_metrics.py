"""Regression metrics with 95% intervals, and paired layer-vs-layer tests on squared errors.

R² (against the test rows' own mean, as scikit-learn's ``r2_score``), Pearson r, Spearman rho and the
mean absolute error: ``metrics`` is featx's one set of regression metrics (probe rows, fit's choice, explain's
by-layer table and predict's score line; elsewhere as ``featx.probing.regression_metrics``). A fixed split:
percentile bootstrap over the test rows; k-fold: the mean over folds with a Student-t interval. Paired tests use
the same test rows (split: the paired sign-flip test of the squared errors) or the same folds (k-fold: the
corrected resampled t-test on per-fold MSE), Holm-adjusted per family as for accuracy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import significance

METRICS = ("r2", "pearson", "spearman", "mae")


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values, axis=-1)


def _correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 1e-12, (a * b).sum(axis=-1) / np.where(denominator > 0, denominator, 1), np.nan)


def metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric over the last axis (so a (B, n) stack of resamples gives B values each)."""
    y_true, y_pred = np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64)
    residual = ((y_true - y_pred) ** 2).sum(axis=-1)
    total = ((y_true - y_true.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(total > 0, 1 - residual / np.where(total > 0, total, 1), np.nan)
    return {
        "r2": r2,
        "pearson": _correlation(y_true, y_pred),
        "spearman": _correlation(_ranks(y_true), _ranks(y_pred)),
        "mae": np.abs(y_true - y_pred).mean(axis=-1),
    }


def bootstrap(y_true, y_pred, n_boot: int, seed: int, groups=None) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of every metric over resamples of the rows (with ``groups``, of whole groups)."""
    rng = np.random.default_rng(seed)
    n = len(y_true)
    chunk = max(1, min(n_boot, 2_000_000 // max(1, n)))
    parts: dict[str, list] = {name: [] for name in METRICS}
    if groups is not None:
        _group_resamples(y_true, y_pred, groups, n_boot, rng, parts)
    else:
        for start in range(0, n_boot, chunk):
            rows = rng.integers(0, n, size=(min(chunk, n_boot - start), n))
            for name, values in metrics(y_true[rows], y_pred[rows]).items():
                parts[name].append(values)
    out = {}
    for name, chunks in parts.items():
        values = np.concatenate(chunks)
        finite = values[np.isfinite(values)]
        out[name] = (
            (float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5)))
            if len(finite)
            else (float("nan"), float("nan"))
        )
    return out


def _group_resamples(y_true, y_pred, groups, n_boot: int, rng, parts: dict[str, list]) -> None:
    """The metrics of ``n_boot`` resamples of whole groups (a group drawn k times counts its rows k times)."""
    unit = np.unique(groups, return_inverse=True)[1]
    n_units, positions = int(unit.max()) + 1, np.arange(len(unit))
    for _ in range(n_boot):
        counts = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
        rows = np.repeat(positions, counts[unit])
        for name, value in metrics(y_true[rows], y_pred[rows]).items():
            parts[name].append(np.atleast_1d(value))


def t_interval(values) -> tuple[float, float, float]:
    from scipy import stats

    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return float("nan"), float("nan"), float("nan")
    mean = float(values.mean())
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return mean, mean - half, mean + half


def summarise(plan, y: np.ndarray, folds, n_boot: int, seed: int) -> dict:
    """The metric columns of one results row from the per-fold predictions."""
    row: dict = {}
    if plan.is_split:
        test = plan.folds[0][1]
        point = metrics(y[test], folds[0].predictions)
        groups = getattr(plan, "groups", None)  # --group: resample whole test groups
        bounds = bootstrap(y[test], folds[0].predictions, n_boot, seed, None if groups is None else groups[test])
        for name in METRICS:
            row[name] = float(point[name])
            row[f"{name}_low"], row[f"{name}_high"] = bounds[name]
    else:
        per_fold = [metrics(y[test], result.predictions) for (_, test), result in zip(plan.folds, folds, strict=False)]
        for name in METRICS:
            row[name], row[f"{name}_low"], row[f"{name}_high"] = t_interval([float(m[name]) for m in per_fold])
    row["n_train"] = int(round(np.mean([len(train) for train, _ in plan.folds])))
    row["n_test"] = int(sum(len(test) for _, test in plan.folds))
    row["fit_seconds"] = float(sum(result.fit_seconds for result in folds))
    alphas = [result.alpha for result in folds if np.isfinite(result.alpha)]
    row["alpha"] = float(np.median(alphas)) if alphas else float("nan")
    return row


def neg_squared_error(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-row score of a regression probe (higher is better): the paired layer tests compare these."""
    return -((pred - y) ** 2)


def paired_p_value(plan, y: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray, n_boot: int, seed: int) -> float:
    """Is a's squared error different from b's on the same rows? (predictions per labelled row)"""
    return significance.paired_p_value(plan, y, pred_a, pred_b, n_boot, seed, score=neg_squared_error)


SIGNIFICANCE = [
    "p_vs_best",
    "p_vs_best_holm",
    "significant_vs_best",
    "p_vs_prev",
    "p_vs_prev_holm",
    "significant_vs_prev",
]


def add_significance(
    table: pd.DataFrame, predictions: dict, plan, y, n_boot: int, seed: int, metric: str = "r2", p_value=None
) -> pd.DataFrame:
    """The best layer (the ``is_best`` row, chosen on training rows) vs each other layer, and each layer vs
    the previous one, per features/site/pooling/classifier group of single-layer rows; Holm within each
    family. The test: ``p_value`` (e.g. in the run's metric), else on squared errors."""
    return significance.add_significance(
        table,
        predictions,
        plan,
        y,
        n_boot,
        seed,
        metric=metric,
        score=neg_squared_error,
        columns=SIGNIFICANCE,
        p_value=p_value,
    )
