"""featx/probing/solvers/ridge.py's MLP regression head: early stopping on scikit-learn's own random 20% without
groups (unchanged), and on a holdout of whole groups with ``--group``, so no group is on both sides."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from featx.probing.solvers import ridge


def _data(rows: int = 120, groups: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 6)).astype(np.float32)
    y = X[:, 0] * 2.0 - X[:, 1] + rng.normal(scale=0.1, size=rows)
    return X, y, np.repeat(np.arange(groups), rows // groups)


def test_without_groups_the_head_is_scikit_learns_early_stopped_mlp():
    from sklearn.neural_network import MLPRegressor

    X, y, _ = _data()
    train, test = np.arange(90), np.arange(90, 120)
    got = ridge._mlp_head(X, y, train, seed=3)(test)
    scaler = ridge.ev.fit_scaler(X, train)
    mean, scale = y[train].mean(), y[train].std()
    model = MLPRegressor(**ridge.MLP_SETTINGS, early_stopping=True, validation_fraction=0.2, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(scaler(X[train]), (y[train] - mean) / scale)
    np.testing.assert_allclose(got, model.predict(scaler(X[test])) * scale + mean, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_with_groups_early_stopping_holds_out_whole_groups(monkeypatch):
    X, y, groups = _data()
    drawn = []
    original = ridge.holdout

    def spy(n, seed, codes=None):
        fit_rows, held_out = original(n, seed, codes)
        drawn.append((codes, fit_rows, held_out))
        return fit_rows, held_out

    monkeypatch.setattr(ridge, "holdout", spy)
    train, test = np.arange(96), np.arange(96, 120)
    fold = ridge.run_mlp(X, y, train, test, None, 0, groups)
    # three holdouts: the head's early stop, the validation head's own split, and that head's early stop
    assert len(drawn) == 3
    for codes, fit_rows, held_out in drawn:
        assert codes is not None and len(held_out) and len(fit_rows)
        assert not set(codes[fit_rows]) & set(codes[held_out])  # no group on both sides
    assert np.isfinite(fold.predictions).all() and len(fold.predictions) == len(test)
    again = ridge.run_mlp(X, y, train, test, None, 0, groups)
    np.testing.assert_array_equal(fold.predictions, again.predictions)  # seeded
    # it learns: far better than the training mean on the test rows
    baseline = np.mean((y[test] - y[train].mean()) ** 2)
    assert np.mean((y[test] - fold.predictions) ** 2) < 0.5 * baseline
