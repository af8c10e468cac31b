"""Paired tests between layers: is layer a really better than layer b on the same rows?

- k-fold cross-validation: the corrected resampled t-test of Nadeau & Bengio (2003) on the per-fold
  accuracy differences (the same folds for both layers); the variance is inflated by n_test/n_train
  because the training parts of the folds overlap.
- a fixed train/test split: a paired bootstrap over the test rows (both layers' predictions on the
  same resampled rows); two-sided p-value of the observed accuracy difference (shift method).

Within each features/pooling/classifier group, the best-vs-others tests and the adjacent-layer tests
each form one family, corrected with Holm's step-down method at ``ALPHA``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ALPHA = 0.05
COLUMNS = [
    "p_vs_best",
    "p_vs_best_holm",
    "significant_vs_best",
    "p_vs_prev",
    "p_vs_prev_holm",
    "significant_vs_prev",
    "p_pooling_vs_best",
    "significant_pooling_vs_best",
]


def corrected_t_test(scores_a, scores_b, n_train: float, n_test: float) -> float:
    """Two-sided p-value of the Nadeau-Bengio corrected resampled t-test on paired fold scores."""
    from scipy import stats

    diff = np.asarray(scores_a, dtype=np.float64) - np.asarray(scores_b, dtype=np.float64)
    k = len(diff)
    mean = float(diff.mean())
    variance = float(diff.var(ddof=1)) if k > 1 else 0.0
    if variance <= 1e-15:
        return 1.0 if abs(mean) <= 1e-12 else 0.0
    t = mean / np.sqrt((1.0 / k + n_test / n_train) * variance)
    return float(2 * stats.t.sf(abs(t), k - 1))


def paired_bootstrap(
    correct_a: np.ndarray, correct_b: np.ndarray, n_boot: int = 2000, seed: int = 0, groups: np.ndarray | None = None
) -> float:
    """Two-sided p-value of accuracy(a) - accuracy(b) from a paired bootstrap over the same test rows;
    with ``groups`` (e.g. the sentence of each word), whole groups are resampled."""
    diff = np.asarray(correct_a, dtype=np.float64) - np.asarray(correct_b, dtype=np.float64)
    observed = float(diff.mean())
    if not np.any(diff):
        return 1.0
    rng = np.random.default_rng(seed)
    if groups is not None:
        return _paired_group_bootstrap(diff, groups, observed, n_boot, rng)
    n = len(diff)
    means = np.concatenate(
        [diff[rng.integers(0, n, size=(size, n))].mean(axis=1) for size in _chunks(n_boot, max(1, 2_000_000 // n))]
    )
    # Shift the bootstrap distribution to the null (mean 0): how often is a difference this large?
    extreme = np.count_nonzero(np.abs(means - observed) >= abs(observed) - 1e-12)
    return float((extreme + 1) / (n_boot + 1))


def _paired_group_bootstrap(diff: np.ndarray, groups: np.ndarray, observed: float, n_boot: int, rng) -> float:
    """``paired_bootstrap`` resampling whole groups: each resample's difference is its summed row
    differences over its row count (the accuracy difference of the resampled rows)."""
    _, group = np.unique(groups, return_inverse=True)
    sums, sizes = np.bincount(group, weights=diff), np.bincount(group).astype(np.float64)
    n = len(sums)
    means = []
    for size in _chunks(n_boot, max(1, 2_000_000 // n)):
        drawn = (np.arange(size)[:, None] * n + rng.integers(0, n, size=(size, n))).ravel()
        counts = np.bincount(drawn, minlength=size * n).reshape(size, n)
        means.append((counts @ sums) / (counts @ sizes))
    extreme = np.count_nonzero(np.abs(np.concatenate(means) - observed) >= abs(observed) - 1e-12)
    return float((extreme + 1) / (n_boot + 1))


def _chunks(total: int, size: int):
    while total > 0:
        yield min(size, total)
        total -= size


def holm(pvalues) -> np.ndarray:
    """Holm step-down adjusted p-values (monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=np.float64)
    adjusted = np.full(len(p), np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    if not len(finite):
        return adjusted
    order = finite[np.argsort(p[finite], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def correct(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-row score of a classifier: 1 where it is right."""
    return pred == y


def paired_p_value(
    plan, y: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray, n_boot: int, seed: int, score=correct
) -> float:
    """The paired test that fits the evaluation ``plan``; predictions are per labelled row (-1 = none).

    ``score(pred, y)`` gives each test row's score (higher is better): correctness by default; regression
    passes the negative squared error."""
    if plan.is_split:
        test = plan.folds[0][1]
        groups = getattr(plan, "groups", None)  # word-level plans: resample whole sentences
        return paired_bootstrap(
            score(pred_a[test], y[test]),
            score(pred_b[test], y[test]),
            n_boot,
            seed,
            None if groups is None else groups[test],
        )
    scores_a = [np.mean(score(pred_a[test], y[test])) for _, test in plan.folds]
    scores_b = [np.mean(score(pred_b[test], y[test])) for _, test in plan.folds]
    n_train = np.mean([len(train) for train, _ in plan.folds])
    n_test = np.mean([len(test) for _, test in plan.folds])
    return corrected_t_test(scores_a, scores_b, float(n_train), float(n_test))


def _chosen(group: pd.DataFrame, metric: str):
    """The row the group's others are tested against: its ``is_best`` row (chosen on training rows), else
    (a table without that column) the best by ``metric``; None when the group has no chosen row."""
    if "is_best" not in group:
        return group[metric].idxmax() if group[metric].notna().any() else None
    marked = group.index[group["is_best"].fillna(False).astype(bool)]
    return marked[0] if len(marked) else None


def add_significance(
    table: pd.DataFrame,
    predictions: dict[int, np.ndarray],
    plan,
    y: np.ndarray,
    n_boot: int = 2000,
    seed: int = 0,
    alpha: float = ALPHA,
    metric: str = "accuracy",
    score=correct,
    columns=COLUMNS,
    p_value=None,
) -> pd.DataFrame:
    """Fill the significance columns of the single-layer rows of ``table`` (index -> predictions): the best
    layer (the ``is_best`` row, chosen on training rows) against each other layer, and each layer against
    the previous one, per features/site/pooling/classifier group, Holm within each family. The test is
    ``p_value(plan, y, pred_a, pred_b, n_boot, seed)`` (e.g. ``selection.Scoring.p_value``, in the run's
    metric), else ``paired_p_value`` with ``score``."""
    if p_value is None:

        def p_value(plan, y, pred_a, pred_b, n_boot, seed):
            return paired_p_value(plan, y, pred_a, pred_b, n_boot, seed, score)

    table = table.copy()
    for column in columns:
        table[column] = pd.Series(
            [np.nan] * len(table), index=table.index, dtype=object if column.startswith("sig") else float
        )
    singles = table[(table.kind == "single") & table.index.isin(list(predictions))]
    sites = ["site"] if "site" in table else []  # extra sites (ffn, attn_out, ...) are their own groups
    for _, group in singles.groupby(["features", *sites, "pooling", "classifier"], sort=False):
        if len(group) < 2:
            continue
        ordered = group.sort_values("layer")
        best = _chosen(ordered, metric)
        if best is not None:
            others = [index for index in ordered.index if index != best]
            p_best = [p_value(plan, y, predictions[best], predictions[i], n_boot, seed) for i in others]
            for index, p, adjusted in zip(others, p_best, holm(p_best), strict=False):
                table.at[index, "p_vs_best"], table.at[index, "p_vs_best_holm"] = p, adjusted
                table.at[index, "significant_vs_best"] = bool(adjusted < alpha)
            table.at[best, "significant_vs_best"] = False
        pairs = list(zip(ordered.index[:-1], ordered.index[1:], strict=False))
        p_prev = [
            p_value(plan, y, predictions[current], predictions[previous], n_boot, seed) for previous, current in pairs
        ]
        for (_, current), p, adjusted in zip(pairs, p_prev, holm(p_prev), strict=False):
            table.at[current, "p_vs_prev"], table.at[current, "p_vs_prev_holm"] = p, adjusted
            table.at[current, "significant_vs_prev"] = bool(adjusted < alpha)
    if "p_pooling_vs_best" in columns:
        _compare_poolings(table, singles, predictions, (plan, y, n_boot, seed, p_value), alpha, metric, sites)
    return table


def _compare_poolings(table, singles, predictions, test, alpha, metric, sites=()) -> None:
    """Best layer of each pooling against the best layer of the best pooling (per features/site/classifier),
    each pooling's best and the best pooling chosen as the ``is_best`` rows are (on training rows)."""
    plan, y, n_boot, seed, p_value = test
    key = "selection_score" if "selection_score" in table else metric
    for _, group in singles.groupby(["features", *sites, "classifier"], sort=False):
        bests = [_chosen(part, metric) for _, part in group.groupby("pooling", sort=False)]
        bests = [index for index in bests if index is not None]
        if len(bests) < 2:
            continue
        top = max(bests, key=lambda index: table.at[index, key])
        others = [index for index in bests if index != top]
        p_values = [p_value(plan, y, predictions[top], predictions[i], n_boot, seed) for i in others]
        for index, adjusted in zip(others, holm(p_values), strict=False):
            table.at[index, "p_pooling_vs_best"] = adjusted
            table.at[index, "significant_pooling_vs_best"] = bool(adjusted < alpha)
        table.at[top, "significant_pooling_vs_best"] = False
