"""The intervals and tests of ``featx intervene``'s drift, bundle and loss rows by whole groups (``--group``,
``featx.interventions.stats``): each equals a hand computation of its method (cluster-robust mean, Korn and
Graubard's Wilson interval, the cluster-robust paired t-test), is wider than the row-wise one when the rows of a
group are alike, and without groups every number is what the row-wise formulas gave, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from featx.interventions.stats import Z95, mean_interval, paired_p_value, share_interval


def _robust_variance(values, groups) -> tuple[float, float, int]:
    """By hand: the mean and its CR1 variance, ``G/(G-1) * sum_g (sum_{i in g} (x_i - mean))**2 / n**2``."""
    n = len(values)
    mean = sum(values) / n
    sums: dict = {}
    for value, group in zip(values, groups, strict=True):
        sums[group] = sums.get(group, 0.0) + (value - mean)
    count = len(sums)
    return mean, count / (count - 1) * sum(total**2 for total in sums.values()) / n**2, count


def _wilson(p: float, n: float) -> tuple[float, float]:
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _planted(seed: int = 0, n_groups: int = 12, size: int = 5):
    """Rows in groups of ``size`` that share most of their value (the group's) and differ a little."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), size)
    values = rng.standard_normal(n_groups)[groups] + 0.1 * rng.standard_normal(n_groups * size)
    return values, groups


def test_the_grouped_mean_interval_is_the_cluster_robust_one():
    values, groups = _planted()
    names = np.array([f"doc{code % 7}-{code}" for code in groups], dtype=object)  # any labels, in any order
    mean, variance, count = _robust_variance(list(values), list(groups))
    half = stats.t.ppf(0.975, count - 1) * math.sqrt(variance)
    got = mean_interval(values, names)
    assert got == pytest.approx((mean, mean - half, mean + half), rel=1e-12)
    rowwise = mean_interval(values)
    assert got[0] == rowwise[0]
    assert got[2] - got[1] > 2 * (rowwise[2] - rowwise[1])  # rows of a group alike: a far wider interval


def test_non_finite_values_leave_with_their_groups():
    values, groups = _planted(1)
    values[[0, 7]] = np.nan, np.inf
    kept = np.isfinite(values)
    assert mean_interval(values, groups) == mean_interval(values[kept], groups[kept])
    assert mean_interval([1.0, 2.0, 3.0], [0, 0, 0])[1:] == pytest.approx((math.nan, math.nan), nan_ok=True)


def test_the_grouped_share_is_wilson_at_korn_and_graubards_effective_size():
    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(15), 4)
    hits = (rng.random(15) < 0.4)[groups] ^ (rng.random(60) < 0.1)  # mostly the group's, a few rows its own
    n, p = len(hits), float(hits.mean())
    _, robust, count = _robust_variance([float(hit) for hit in hits], list(groups))
    effect = robust / (p * (1 - p) / (n - 1))
    size = min(n, n / effect * (stats.t.ppf(0.975, n - 1) / stats.t.ppf(0.975, count - 1)) ** 2)
    got = share_interval(hits, groups=groups)
    assert got == pytest.approx((p, *_wilson(p, size)), rel=1e-12)
    rowwise = share_interval(hits)
    assert got[0] == rowwise[0] and got[2] - got[1] > 1.5 * (rowwise[2] - rowwise[1])


def test_a_grouped_share_without_spread_counts_each_group_once_and_never_beats_the_rows():
    groups = np.repeat(np.arange(6), 10)
    assert share_interval(np.zeros(60, bool), groups=groups) == pytest.approx((0.0, *_wilson(0.0, 6)))
    alternating = np.tile([True, False], 30)  # every group holds the same share: no design effect
    assert share_interval(alternating, groups=groups) == share_interval(alternating)
    with pytest.raises(ValueError, match="cannot be grouped"):
        share_interval(np.ones(3, bool), 5, groups=[0, 1, 2])


def test_the_grouped_paired_test_is_the_cluster_robust_t_test_of_the_differences():
    before, groups = _planted(3)
    shift = np.random.default_rng(4).standard_normal(12)[groups]  # each group's own change, shared by its rows
    after = before + 0.3 + 0.5 * shift + 0.05 * np.random.default_rng(5).standard_normal(len(groups))
    mean, variance, count = _robust_variance(list(after - before), list(groups))
    expected = 2 * stats.t.sf(abs(mean / math.sqrt(variance)), count - 1)
    assert paired_p_value(after, before, groups) == pytest.approx(expected, rel=1e-10)
    assert paired_p_value(after, before, groups) > 10 * paired_p_value(after, before)
    alone = np.arange(len(groups))  # one row per group: the paired t-test itself
    assert paired_p_value(after, before, alone) == pytest.approx(stats.ttest_rel(after, before).pvalue, rel=1e-9)


def _old_mean_interval(values):
    """featx 0.x's row-wise formula, verbatim: what every number without --group must stay."""
    array = np.asarray(values, np.float64)
    array = array[np.isfinite(array)]
    if len(array) == 0:
        return math.nan, math.nan, math.nan
    mean = float(array.mean())
    if len(array) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(array) - 1) * array.std(ddof=1) / math.sqrt(len(array)))
    return mean, mean - half, mean + half


def _old_share_interval(hits, total=None):
    hits = np.asarray(hits, bool)
    n = len(hits) if total is None else int(total)
    if n == 0:
        return math.nan, math.nan, math.nan
    p = float(hits.sum()) / n
    low, high = _wilson(p, n)
    return p, 0.0 if p == 0 else low, 1.0 if p == 1 else high  # the ends at a share of none or all: exact


def test_without_groups_and_with_one_row_per_group_every_number_is_the_row_wise_one():
    rng = np.random.default_rng(5)
    for trial in range(120):
        n = int(rng.integers(0, 200))
        values = rng.standard_normal(n) * rng.exponential(3.0) + 50 * rng.standard_normal()
        if n and trial % 5 == 0:
            values[rng.integers(n)] = np.nan
        expected = np.asarray(_old_mean_interval(values))
        for groups in (None, np.arange(n)):  # every row its own group: the very same arithmetic
            assert np.array_equal(np.asarray(mean_interval(values, groups)), expected, equal_nan=True)
        hits = rng.random(n) < rng.random()
        expected = np.asarray(_old_share_interval(hits))
        for groups in (None, np.arange(n)):
            assert np.array_equal(np.asarray(share_interval(hits, groups=groups)), expected, equal_nan=True)
        assert share_interval(hits, n) == share_interval(hits)
        if n > 2:
            other = values + rng.standard_normal(n)
            np.testing.assert_equal(paired_p_value(values, other), stats.ttest_rel(values, other).pvalue)


def test_a_share_of_none_or_all_has_its_interval_end_exactly_at_the_bound():
    """Wilson's lower end at p = 0 is 0 exactly; float rounding wrote 1.387779e-17 into the steering CSV."""
    for n in (7, 60, 361):
        none, every = share_interval(np.zeros(n, bool)), share_interval(np.ones(n, bool))
        assert none[0] == none[1] == 0.0 and 0 < none[2] < 1
        assert every[0] == every[2] == 1.0 and 0 < every[1] < 1
