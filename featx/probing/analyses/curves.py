"""Learning curves: accuracy against training-set size, on the same outer folds as the main probe.

Each fold's training part is subsampled (stratified where every class can keep a row, seeded by the
fold), the test part is unchanged, so the points of one curve differ only in how much data the probe saw.
Each point stands beside its baseline (``curve_baselines``): the majority class, or for a number the training mean,
fitted on the same subsampled training rows and scored on the same test rows.
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ...options import spoken_value
from ..evaluation import Plan


def parse_train_sizes(text) -> list[float]:
    """``"0.1,0.25,0.5,1.0"`` (fractions of each training part) or ``"50,100,200"`` (row counts)."""
    parts = text if isinstance(text, (list, tuple)) else str(text).split(",")
    sizes = []
    for part in parts:
        part = str(part).strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise InputError(
                f"--train-sizes: '{part}' is not a number", "give fractions (0.1,0.5,1.0) or row counts (50,100,200)"
            ) from None
        if value <= 0 or (value > 1 and value != int(value)):
            raise InputError(f"--train-sizes: {part} is neither a fraction in (0, 1] nor a whole row count")
        sizes.append(value)
    if not sizes:
        raise InputError(
            "--train-sizes selects nothing",
            f"e.g. {spoken_value(None, 'train_sizes', '0.1,0.25,0.5,1.0', '--train-sizes')}",
        )
    return sorted(dict.fromkeys(sizes))


def subsample(y: np.ndarray, rows: np.ndarray, size: float, seed: int) -> np.ndarray:
    """A seeded, stratified subset of ``rows``: ``size`` is a fraction (<= 1) or a row count (> 1)."""
    n = len(rows) if size == 1.0 else int(round(size * len(rows))) if size < 1 else int(size)
    classes = np.unique(y[rows])
    n = max(2 * len(classes), min(n, len(rows)))  # a probe needs every class at least twice (fit + holdout)
    if n >= len(rows):
        return rows
    rng = np.random.default_rng(seed)
    from sklearn.model_selection import train_test_split

    counts = np.bincount(y[rows])
    stratify = y[rows] if counts[counts > 0].min() >= 2 else None
    chosen, _ = train_test_split(rows, train_size=n, stratify=stratify, random_state=int(rng.integers(2**31 - 1)))
    return np.sort(chosen)


def subsampled_plan(plan: Plan, y: np.ndarray, size: float, seed: int, strata=None) -> Plan:
    """``plan`` with each training part subsampled (seeded per fold), stratified by ``y`` (classes), or with
    ``strata`` by ``strata(y, train)``: each row's stratum drawn from the training part ``train`` alone (a number's
    quantile bins, whose edges a test row never moves); a grouped plan (``--group``) keeps whole groups, as many
    as make up ``size``, and its groups, so the inner holdouts stay by group."""
    folds = []
    for index, (train, test) in enumerate(plan.folds):
        labels = y if strata is None else strata(y, train)
        if plan.groups is not None:
            from .word_curves import sentence_subsample

            folds.append((sentence_subsample(plan.groups, train, size, seed + 7 * index, labels), test))
        else:
            folds.append((subsample(labels, train, size, seed + 7 * index), test))
    return Plan(plan.evaluation, folds, list(plan.dev), plan.groups)
