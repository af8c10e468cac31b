"""Intervals of ``featx intervene``'s output measures: a mean over rows with its 95% Student-t interval (drift,
loss change) and a share of rows with its 95% Wilson interval (flips, steering)."""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def mean_interval(values) -> tuple[float, float, float]:
    """The mean of ``values`` and its 95% Student-t interval (NaN bounds below two values)."""
    from scipy import stats

    array = np.asarray(values, np.float64)
    array = array[np.isfinite(array)]
    if len(array) == 0:
        return math.nan, math.nan, math.nan
    mean = float(array.mean())
    if len(array) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(array) - 1) * array.std(ddof=1) / math.sqrt(len(array)))
    return mean, mean - half, mean + half


def share_interval(hits, total: int | None = None) -> tuple[float, float, float]:
    """The share of true values in ``hits`` (a boolean array) and its 95% Wilson interval."""
    hits = np.asarray(hits, bool)
    n = len(hits) if total is None else int(total)
    if n == 0:
        return math.nan, math.nan, math.nan
    p = float(hits.sum()) / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def cosines(a, b) -> np.ndarray:
    """Row-wise cosine of two ``(n, d)`` matrices (1 where both rows are zero)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = (a * b).sum(axis=1)
    return np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 1.0)


__all__ = ["cosines", "mean_interval", "share_interval"]
