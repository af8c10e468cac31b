"""Intervals of ``featx intervene``'s output measures: a mean over rows with its 95% Student-t interval (drift,
loss change), a share of rows with its 95% Wilson interval (flips, steering) and the paired t-test (the loss).

With ``groups`` (``--group``: a code per row), the group is the unit: rows of one group (a document, a speaker)
are not independent draws. The mean's standard error is then cluster-robust (CR1: ``G/(G-1)`` times the sum over
the ``G`` groups of the squared sums of the rows' deviations from the mean, over ``n**2``), with a Student-t of
``G-1`` degrees of freedom; the paired test is the same t-test of the per-row differences; a share's Wilson
interval is taken at Korn and Graubard's effective sample size (``n`` over the design effect, the cluster-robust
variance of the share over its row-wise one ``p(1-p)/(n-1)``, times ``(t[n-1]/t[G-1])**2``, at most ``n``; ``G``
when every row has the same value, where the design effect cannot be estimated). With one row per group, each is
exactly the row-wise one (the same arithmetic), which is what ``groups=None`` computes; only the row-wise paired
test is scipy's ``ttest_rel`` itself (the grouped one equals it to rounding)."""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def _units(values, groups) -> tuple[np.ndarray, np.ndarray]:
    """The finite values and each one's group coded 0..G-1 (every row its own group without ``groups``)."""
    array = np.asarray(values, np.float64)
    finite = np.isfinite(array)
    if groups is None:
        return array[finite], np.arange(int(finite.sum()))
    codes = np.asarray(groups).reshape(-1)
    if len(codes) != len(array):
        raise ValueError(f"{len(codes)} groups for {len(array)} values")
    return array[finite], np.unique(codes[finite], return_inverse=True)[1].reshape(-1)


def _spread(array: np.ndarray, codes: np.ndarray) -> tuple[float, float, int]:
    """The mean, the standard deviation such that the mean's (cluster-robust) standard error is it over
    ``sqrt(n)``, and the number of groups: ``sqrt(sum over groups of their squared sums of deviations / (G-1)) *
    sqrt(G/n)``, which with one row per group is the sample standard deviation (``ddof=1``), bit for bit."""
    mean = array.mean()
    sums = np.bincount(codes, weights=array - mean)
    count = len(sums)
    if count < 2:
        return float(mean), math.nan, count
    deviation = np.sqrt(np.sum(sums * sums) / (count - 1)) * math.sqrt(count / len(array))
    return float(mean), float(deviation), count


def mean_interval(values, groups=None) -> tuple[float, float, float]:
    """The mean of ``values`` and its 95% Student-t interval (NaN bounds below two values, or two groups); with
    ``groups``, cluster-robust with ``G-1`` degrees of freedom (the module's docstring)."""
    from scipy import stats

    array, codes = _units(values, groups)
    if len(array) == 0:
        return math.nan, math.nan, math.nan
    mean, deviation, count = _spread(array, codes)
    if count < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, count - 1) * deviation / math.sqrt(len(array)))
    return mean, mean - half, mean + half


def _effective_size(hits: np.ndarray, codes: np.ndarray) -> float:
    """Korn and Graubard's effective sample size of a share (the module's docstring): ``n`` itself with one row
    per group (the design effect and the ratio of the t quantiles are then exactly 1)."""
    from scipy import stats

    n = len(hits)
    count = int(codes.max()) + 1
    if n < 2 or count < 2:
        return float(count)
    values = hits.astype(np.float64)
    deviations = values - values.mean()
    rowwise = float(np.sum(deviations * deviations))
    if rowwise == 0.0:  # every row the same: no design effect to estimate, each group counted once
        return float(count)
    sums = np.bincount(codes, weights=deviations)
    effect = float(np.sum(sums * sums)) / rowwise * ((n - 1) * count) / ((count - 1) * n)
    if effect == 0.0:
        return float(n)
    ratio = float(stats.t.ppf(0.975, n - 1) / stats.t.ppf(0.975, count - 1))
    return min(float(n), n / effect * ratio * ratio)


def share_interval(hits, total: int | None = None, groups=None) -> tuple[float, float, float]:
    """The share of true values in ``hits`` (a boolean array) over ``total`` rows (default: as many as hits) and
    its 95% Wilson interval; with ``groups``, at the effective sample size of the groups (the module's docstring),
    which is ``n`` with one row per group."""
    hits = np.asarray(hits, bool)
    n = len(hits) if total is None else int(total)
    if groups is not None and n != len(hits):
        raise ValueError(f"a share of {len(hits)} hits over {n} rows cannot be grouped")
    if n == 0:
        return math.nan, math.nan, math.nan
    p = float(hits.sum()) / n
    size = float(n) if n != len(hits) else _effective_size(hits, _units(hits, groups)[1])
    centre = (p + Z95**2 / (2 * size)) / (1 + Z95**2 / size)
    half = Z95 * math.sqrt(p * (1 - p) / size + Z95**2 / (4 * size * size)) / (1 + Z95**2 / size)
    low = 0.0 if p == 0.0 else max(0.0, centre - half)  # exactly: rounding left 1.4e-17 in the written files
    high = 1.0 if p == 1.0 else min(1.0, centre + half)
    return p, low, high


def paired_p_value(a, b, groups=None) -> float:
    """The two-sided p-value of the paired t-test of ``a`` against ``b`` (scipy's ``ttest_rel``); with ``groups``,
    the t-test of the per-row differences' mean with its cluster-robust standard error and ``G-1`` degrees of
    freedom (NaN below two groups)."""
    from scipy import stats

    if groups is None:
        return float(stats.ttest_rel(a, b).pvalue)
    differences, codes = _units(np.asarray(a, np.float64) - np.asarray(b, np.float64), groups)
    if len(differences) == 0:
        return math.nan
    mean, deviation, count = _spread(differences, codes)
    if count < 2:
        return math.nan
    t = mean / (deviation / math.sqrt(len(differences)))
    return float(2 * stats.t.sf(abs(t), count - 1))


def cosines(a, b) -> np.ndarray:
    """Row-wise cosine of two ``(n, d)`` matrices (1 where both rows are zero)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = (a * b).sum(axis=1)
    return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 1.0)


__all__ = ["cosines", "mean_interval", "paired_p_value", "share_interval"]
