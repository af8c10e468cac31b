"""Regression metrics against scipy/scikit-learn, their intervals, and the squared-error tests."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import mean_absolute_error, r2_score

from featx.probing.evaluation import Plan
from featx.probing.evaluation import regression_metrics as rm


def test_metrics_match_scipy_and_sklearn_also_on_a_stack_of_resamples():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(40)
    p = y + 0.5 * rng.standard_normal(40)
    p[3] = p[5]  # a tie for the ranks
    values = rm.metrics(y, p)
    assert values["r2"] == pytest.approx(r2_score(y, p))
    assert values["pearson"] == pytest.approx(stats.pearsonr(y, p)[0])
    assert values["spearman"] == pytest.approx(stats.spearmanr(y, p)[0])
    assert values["mae"] == pytest.approx(mean_absolute_error(y, p))
    stacked = rm.metrics(np.stack([y, y[::-1]]), np.stack([p, p[::-1]]))
    assert stacked["spearman"][1] == pytest.approx(stats.spearmanr(y, p)[0])
    constant = rm.metrics(y, np.full(40, y.mean()))
    assert np.isnan(constant["pearson"]) and constant["r2"] == pytest.approx(0.0)


def test_split_intervals_cover_the_point_and_cv_uses_fold_means():
    rng = np.random.default_rng(1)
    y = rng.standard_normal(60)
    folds_split = [
        type("F", (), {"predictions": y[30:] + 0.3 * rng.standard_normal(30), "alpha": 1.0, "fit_seconds": 0.0})()
    ]
    split = Plan("split", [(np.arange(30), np.arange(30, 60))], [None])
    row = rm.summarise(split, y, folds_split, 300, 0)
    for name in rm.METRICS:
        assert row[f"{name}_low"] <= row[name] <= row[f"{name}_high"]
    cv = Plan("2-fold cv", [(np.arange(30, 60), np.arange(30)), (np.arange(30), np.arange(30, 60))], [None, None])
    parts = [
        type("F", (), {"predictions": y[test] + 0.2, "alpha": a, "fit_seconds": 0.0})()
        for (_, test), a in zip(cv.folds, (1.0, 100.0), strict=False)
    ]
    row = rm.summarise(cv, y, parts, 10, 0)
    assert row["mae"] == pytest.approx(0.2) and row["alpha"] == pytest.approx(50.5)


def test_squared_error_test_tells_a_better_layer_from_a_worse_one():
    rng = np.random.default_rng(2)
    y = rng.standard_normal(200)
    split = Plan("split", [(np.arange(0), np.arange(200))], [None])
    good, bad = y + 0.1 * rng.standard_normal(200), y + 1.0 * rng.standard_normal(200)
    assert rm.paired_p_value(split, y, good, bad, 500, 0) < 0.01
    assert rm.paired_p_value(split, y, good, good, 500, 0) == 1.0
