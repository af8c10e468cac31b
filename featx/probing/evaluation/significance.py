"""Paired tests between layers: is layer a really better than layer b on the same rows?

- k-fold cross-validation: the corrected resampled t-test of Nadeau & Bengio (2003) on the per-fold
  differences (the same folds for both layers); the variance is inflated by n_test/n_train because the
  training parts of the folds overlap. Folds that all differ by the same amount (zero variance) leave the t
  statistic undefined; they get the exact sign test over the k folds instead (p = 2^(1-k) when every fold
  favours the same side, 0.0625 at 5 folds): k agreeing folds show no more than that.
- a fixed train/test split: a paired randomisation (sign-flip) test over the test rows. Under the null
  hypothesis each row's difference (a's per-row score minus b's) is as likely to have the opposite sign;
  the two-sided p-value is the share of sign patterns whose summed difference is at least as far from 0 as
  the observed one. For correctness (accuracy) this is McNemar's exact test,
  p = min(1, 2 * P(Binomial(n01 + n10, 1/2) <= min(n01, n10))) over the rows only one of a and b gets right,
  valid at every n (1 differing row: p = 1; 5 rows all favouring a: p = 2/32). With ``groups`` (the sentence
  of each word, ``--group``) each group's summed difference is flipped as one unit. Differences that are whole
  numbers (correctness summed over a group: how many more of its rows a gets right than b) get the exact test
  at every number of units (``lattice_p``: the summed difference's distribution over all 2^m sign patterns of
  the m units, one scaled Binomial(count, 1/2) per distinct unit size, convolved; McNemar's exact test when every
  unit has one size, of which it is the special case); its p has no floor beyond the data's own (2^(1-m)), and it
  costs less than drawing patterns (50,000 rows in 2,000 groups: about 10 ms). So every accuracy test of a split
  is exact. Other differences (the squared errors of regression, R²'s test) are enumerated up to
  ``EXACT_UNITS`` units with a non-zero difference (an exact p); beyond, ``n_boot`` random patterns (seeded) give
  the Monte Carlo p-value (b + 1) / (B + 1), which is never below 1 / (B + 1). Metrics that are no per-row sum
  (macro-F1, balanced accuracy, Pearson, Spearman) are tested by ``selection.Scoring``: the same randomisation,
  swapping a's and b's predictions of a row (or group), Monte Carlo alike. Differences that are whole multiples of
  one step (``featx neurons``: a row's correctness against its mean over the random draws) get the exact test by
  ``lattice_sign_flip``, which scales them to whole numbers.

Within each features/pooling/classifier group, the best-vs-others tests and the adjacent-layer tests
each form one family, corrected with Holm's step-down method at ``ALPHA``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ALPHA = 0.05
EXACT_UNITS = 16  # up to this many units with a non-zero difference: all 2^m sign patterns are enumerated
PATTERN_CELLS = 2_000_000  # units x patterns held at once by a randomisation test
# Whole-number differences summing to at most this (in absolute value) get the exact lattice test: its arrays hold
# at most that many probabilities (accuracy: one per differing row, so every test part that fits in memory).
LATTICE_SPAN = 10_000_000
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


def mcnemar_exact(n01: int, n10: int) -> float:
    """Two-sided p-value of McNemar's exact test (the sign test): ``n01`` units favour one side, ``n10`` the
    other, each side equally likely under the null; min(1, 2 * P(Binomial(n01 + n10, 1/2) <= min(n01, n10)))."""
    from scipy import stats

    n = int(n01) + int(n10)
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * stats.binom.cdf(min(int(n01), int(n10)), n, 0.5)))


def corrected_t_test(scores_a, scores_b, n_train: float, n_test: float) -> float:
    """Two-sided p-value of the Nadeau-Bengio corrected resampled t-test on paired fold scores; folds that all
    differ by the same amount (zero variance: no t statistic) get the exact sign test over the folds."""
    from scipy import stats

    diff = np.asarray(scores_a, dtype=np.float64) - np.asarray(scores_b, dtype=np.float64)
    k = len(diff)
    mean = float(diff.mean())
    variance = float(diff.var(ddof=1)) if k > 1 else 0.0
    if variance <= 1e-15:
        if abs(mean) <= 1e-12:
            return 1.0
        return mcnemar_exact(int(np.count_nonzero(diff > 1e-12)), int(np.count_nonzero(diff < -1e-12)))
    t = mean / np.sqrt((1.0 / k + n_test / n_train) * variance)
    return float(2 * stats.t.sf(abs(t), k - 1))


def sign_patterns(m: int, n_boot: int, seed: int, width: int = 0, exact_units: int = EXACT_UNITS):
    """The 0/1 patterns (which of ``m`` units are flipped, or swapped) of a paired randomisation test, in chunks of
    at most ``PATTERN_CELLS`` cells (a pattern costing max(m, ``width``)): ``(exact, chunks)``, every one of the
    2^m patterns when m <= ``exact_units`` (exact), else ``n_boot`` random ones drawn with ``seed``."""
    rows = max(1, PATTERN_CELLS // max(m, width, 1))
    if m <= exact_units:
        codes, bits = np.arange(2**m), np.arange(m)
        return True, (((codes[i : i + rows, None] >> bits) & 1).astype(np.int8) for i in range(0, len(codes), rows))
    rng = np.random.default_rng(seed)
    return False, (rng.integers(0, 2, size=(min(rows, n_boot - i), m), dtype=np.int8) for i in range(0, n_boot, rows))


def randomisation_p(extreme: int, total: int, exact: bool) -> float:
    """The p-value of ``extreme`` patterns at least as far from 0 as the observed one among ``total``: their share
    when every pattern was enumerated, else the Monte Carlo (b + 1) / (B + 1)."""
    return float(extreme / total) if exact else float((extreme + 1) / (total + 1))


def _unit_differences(score_a, score_b, groups: np.ndarray | None) -> np.ndarray:
    """a's score minus b's of each unit the test flips: each row, or with ``groups`` each group's summed difference."""
    diff = np.asarray(score_a, dtype=np.float64) - np.asarray(score_b, dtype=np.float64)
    if groups is None:
        return diff
    return np.bincount(np.unique(groups, return_inverse=True)[1].ravel(), weights=diff).astype(np.float64)


def paired_sign_flip(
    score_a: np.ndarray, score_b: np.ndarray, n_boot: int = 2000, seed: int = 0, groups: np.ndarray | None = None
) -> float:
    """Two-sided p-value of mean(score_a) - mean(score_b) on the same rows (per-row scores, e.g. correctness)
    from the paired sign-flip randomisation test; with ``groups`` (e.g. the sentence of each word) each group's
    summed difference flips as one unit. Units whose differences all have one size (correctness over rows) get
    McNemar's exact test; whole-number differences (correctness summed over groups) the exact ``lattice_p`` at
    every size; else every pattern up to ``EXACT_UNITS`` units, or ``n_boot`` random ones (seeded)."""
    diff = _unit_differences(score_a, score_b, groups)
    scale = float(np.abs(diff).sum())
    units = diff[np.abs(diff) > 1e-12 * max(scale, 1.0)]
    if not len(units):
        return 1.0
    sizes = np.abs(units)
    if sizes.max() - sizes.min() <= 1e-9 * sizes.max():  # +-c each: the sum's null distribution is binomial
        return mcnemar_exact(int(np.count_nonzero(units > 0)), int(np.count_nonzero(units < 0)))
    whole = np.rint(units)
    if scale <= LATTICE_SPAN and np.abs(units - whole).max() <= 1e-9:  # e.g. a group's count of rows a gets right
        return lattice_p(whole.astype(np.int64))
    observed, tolerance = abs(float(units.sum())), 1e-9 * scale
    extreme, total = 0, 0
    exact, chunks = sign_patterns(len(units), n_boot, seed)
    for patterns in chunks:
        flipped = patterns.astype(np.float64) @ units  # the sum of the flipped units, before flipping
        extreme += int(np.count_nonzero(np.abs(units.sum() - 2 * flipped) >= observed - tolerance))
        total += len(flipped)
    return randomisation_p(extreme, total, exact)


def _binomial_half(count: int) -> tuple[int, np.ndarray]:
    """The first value and the probabilities of Binomial(``count``, 1/2) from its first to its last value whose
    probability is not 0 in float64 (beyond about 38 standard deviations a probability is below the smallest
    float: dropping those values loses nothing that float64 could hold)."""
    from scipy import stats

    pmf = stats.binom.pmf(np.arange(count + 1), count, 0.5)
    kept = np.flatnonzero(pmf)
    return int(kept[0]), pmf[kept[0] : kept[-1] + 1]


def lattice_sign_flip(score_a, score_b, steps: int, groups: np.ndarray | None = None) -> float:
    """Exact two-sided p-value of the paired sign-flip test when every row's difference is a whole multiple of
    1 / ``steps`` (a row's correctness against its mean correctness over ``steps`` random draws): the summed
    difference's distribution over all 2^m sign patterns of the m units (rows, or ``groups`` flipped whole) is
    the convolution of one scaled Binomial(count, 1/2) per distinct unit size, so the p is exact, with no Monte
    Carlo floor of 1 / (B + 1): as small as the data show (at least 2^(1-m), and 0.0 only below float64's range).
    Cost: about the number of units times the spread of the sum, never 2^m."""
    diff = _unit_differences(score_a, score_b, groups) * steps
    units = np.rint(diff).astype(np.int64)
    if np.abs(diff - units).max(initial=0.0) > 1e-6:
        raise ValueError(f"the differences are not whole multiples of 1/{steps}")
    return lattice_p(units)


def lattice_p(units: np.ndarray) -> float:
    """The exact two-sided sign-flip p of whole-number unit differences (zeros ignored): the share of all 2^m sign
    patterns of the m non-zero units whose sum is at least as far from 0 as theirs, from the sum's distribution
    (one scaled Binomial(count, 1/2) per distinct size, convolved)."""
    units = np.asarray(units, dtype=np.int64)
    units = units[units != 0]
    if not len(units):
        return 1.0
    # W: the summed size of the units whose sign is +; under the null each sign is a fair coin, and the sum
    # of the units is 2W - total. pmf[i] = P(W = low + i).
    pmf, low, total = np.ones(1), 0, int(np.abs(units).sum())
    for size, count in zip(*np.unique(np.abs(units), return_counts=True), strict=True):
        first, weights = _binomial_half(int(count))
        spread = np.zeros(len(pmf) + int(size) * (len(weights) - 1))
        for j, weight in enumerate(weights):
            spread[int(size) * j : int(size) * j + len(pmf)] += weight * pmf
        kept = np.flatnonzero(spread)
        pmf, low = spread[kept[0] : kept[-1] + 1], low + int(size) * first + int(kept[0])
    sums = 2 * (low + np.arange(len(pmf))) - total
    return float(min(1.0, pmf[np.abs(sums) >= abs(int(units.sum()))].sum()))


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

    ``score(pred, y)`` gives each test row's score (higher is better): correctness by default (McNemar's exact
    test on a split); regression passes the negative squared error (R² differences on the same rows are its
    sums). ``n_boot``: the random sign patterns when the differences are not whole numbers (correctness is: its test
    is exact) and too many units differ to enumerate them all."""
    if plan.is_split:
        test = plan.folds[0][1]
        groups = getattr(plan, "groups", None)  # word-level plans: flip whole sentences
        return paired_sign_flip(
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
