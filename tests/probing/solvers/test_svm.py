"""The svm probe's own solver (``featx.probing.solvers.svm``): scikit-learn's ``LinearSVC`` objective, reached at
least as closely as liblinear reaches it, with the same predictions and attributes."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.svm import LinearSVC

from featx.probing.solvers import svm_newton
from featx.probing.solvers.svm import SquaredHingeSVC, _loss
from featx.probing.solvers.svm_newton import Grams


def _objective(model, X, y, C, class_weight) -> float:
    """LinearSVC's objective (liblinear's weighting) at ``model``'s coefficients."""
    codes = np.searchsorted(model.classes_, y)
    targets, row_c = SquaredHingeSVC(C=C, class_weight=class_weight)._problems(codes, len(model.classes_))
    params = np.vstack([np.asarray(model.coef_).T, np.asarray(model.intercept_)[None, :]])
    margins = 1.0 - targets * (X @ params[:-1] + params[-1])
    return float(_loss(params, margins, row_c).sum())


def _data(n_classes: int, seed: int = 0, n: int = 120, d: int = 10):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, d))
    y = rng.choice(n_classes, size=n, p=np.linspace(1, 2, n_classes) / np.linspace(1, 2, n_classes).sum())
    X = centres[y] + rng.normal(scale=1.5, size=(n, d))
    return (X - X.mean(0)) / X.std(0), np.array(["a", "b", "c", "d"])[y]


@pytest.mark.parametrize("n_classes", [2, 3, 4])
@pytest.mark.parametrize("class_weight", [None, "balanced"])
@pytest.mark.parametrize("C", [0.01, 1.0])
def test_the_objective_of_linearsvc_at_least_as_low(n_classes, class_weight, C):
    X, y = _data(n_classes)
    reference = LinearSVC(C=C, tol=1e-8, max_iter=100_000, class_weight=class_weight, dual=True).fit(X, y)
    ours = SquaredHingeSVC(C=C, tol=1e-8, class_weight=class_weight).fit(X, y)
    assert list(ours.classes_) == list(reference.classes_)
    assert ours.coef_.shape == reference.coef_.shape and ours.intercept_.shape == reference.intercept_.shape
    mine, theirs = _objective(ours, X, y, C, class_weight), _objective(reference, X, y, C, class_weight)
    assert mine <= theirs * (1 + 1e-7)
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-4 * max(1.0, np.abs(reference.coef_).max()))
    assert np.array_equal(ours.predict(X), reference.predict(X))
    np.testing.assert_allclose(ours.decision_function(X), reference.decision_function(X), atol=1e-3)


def test_a_warm_start_reaches_the_same_weights_and_clones_keep_the_settings():
    X, y = _data(3, seed=1)
    cold = SquaredHingeSVC(C=1.0, tol=1e-8).fit(X, y)
    warm = SquaredHingeSVC(C=0.01, tol=1e-8, warm_start=True).fit(X, y)
    warm.set_params(C=1.0).fit(X, y)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)
    assert warm.n_iter_ <= cold.n_iter_
    copy = clone(warm)
    assert copy.get_params() == warm.get_params() and not hasattr(copy, "coef_")
    other = SquaredHingeSVC(C=1.0, tol=1e-8, warm_start=True).fit(X[:, :5], y)  # another width: a cold start
    np.testing.assert_allclose(other.coef_, SquaredHingeSVC(C=1.0, tol=1e-8).fit(X[:, :5], y).coef_, atol=1e-9)


def test_one_class_is_refused_and_non_convergence_warns():
    X, y = _data(2)
    with pytest.raises(ValueError, match="at least 2 classes"):
        SquaredHingeSVC().fit(X, np.zeros(len(X)))
    with pytest.warns(UserWarning, match="not converged"):
        SquaredHingeSVC(C=100.0, tol=1e-12, max_iter=1).fit(X, y)


@pytest.mark.parametrize("class_weight", [None, "balanced"])
@pytest.mark.parametrize("inside", [0.2, 0.9])
def test_the_exact_hessian_from_the_groups_grams_is_the_hessian(class_weight, inside):
    """``I + [X 1]^T D [X 1]`` built from the rows inside the margin (few inside) or from the row groups' Grams less
    the rows outside it (most inside), with balanced weights making a group of each class."""
    X, y = _data(3, seed=2)
    codes = np.searchsorted(np.unique(y), y)
    targets, row_c = SquaredHingeSVC(C=0.5, class_weight=class_weight)._problems(codes, 3)
    active = np.random.default_rng(3).random(row_c.shape) < inside
    curvature = 2.0 * row_c * active
    grams = Grams(X, row_c)
    ones = np.hstack([X, np.ones((len(X), 1))])
    for problem in range(3):
        expected = np.eye(ones.shape[1]) + ones.T @ (ones * curvature[:, problem, None])
        np.testing.assert_allclose(grams.hessian(X, curvature, problem), expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("class_weight", [None, "balanced"])
@pytest.mark.parametrize("exact_steps", ["every", "first"])
def test_exact_newton_steps_reach_the_same_weights(monkeypatch, class_weight, exact_steps):
    """Steps by the exact Hessian (no budget for conjugate gradients: every step, or the first, the later ones by
    conjugate gradients preconditioned by its factorisation): the weights conjugate gradients alone reach, and
    LinearSVC's predictions."""
    X, y = _data(4, seed=4)
    alone = SquaredHingeSVC(C=10.0, tol=1e-8, class_weight=class_weight).fit(X, y)
    budgets, calls = Grams.budgets, []

    def no_budget(self, curvature, rows):
        calls.append(rows)
        first = exact_steps == "every" or len(calls) == 1
        return np.zeros(curvature.shape[1]) if first else budgets(self, curvature, rows)

    monkeypatch.setattr(svm_newton, "MIN_CG", 0)
    monkeypatch.setattr(Grams, "budgets", no_budget)
    exact = SquaredHingeSVC(C=10.0, tol=1e-8, class_weight=class_weight).fit(X, y)
    assert len(calls) == exact.n_iter_ > 1
    np.testing.assert_allclose(exact.coef_, alone.coef_, atol=1e-5 * max(1.0, np.abs(alone.coef_).max()))
    reference = LinearSVC(C=10.0, tol=1e-8, max_iter=100_000, class_weight=class_weight, dual=True).fit(X, y)
    assert np.array_equal(exact.predict(X), reference.predict(X))
    assert _objective(exact, X, y, 10.0, class_weight) <= _objective(reference, X, y, 10.0, class_weight) * (1 + 1e-7)


def test_a_c_path_reuses_the_grams_of_the_same_rows_only(monkeypatch):
    """The rows' Grams are computed once along a C path (the same rows, another C), again for other rows or
    weights; each fit starts without the previous fit's factorised Hessians, and reaches the cold fit's weights."""
    built = []
    real = Grams.__init__

    def counting(self, X, row_c):
        built.append(len(X))
        real(self, X, row_c)

    monkeypatch.setattr(Grams, "__init__", counting)
    X, y = _data(3, seed=5)
    model = SquaredHingeSVC(C=0.01, tol=1e-8, warm_start=True)
    for C in (0.01, 0.1, 1.0):
        model.set_params(C=C).fit(X.copy(), y)
    assert built == [len(X)]
    np.testing.assert_allclose(model.coef_, SquaredHingeSVC(C=1.0, tol=1e-8).fit(X, y).coef_, atol=1e-6)
    assert built == [len(X)] * 2  # the cold fit's own
    model.fit(X[:-1], y[:-1])
    model.set_params(class_weight="balanced").fit(X[:-1], y[:-1])
    assert built == [len(X)] * 2 + [len(X) - 1] * 2
    grams = model._grams_cache[1]
    grams.factors[0] = ("stale", True)
    assert grams.fresh().factors == [None] * 3 and grams.fresh().vectors is grams.vectors


def test_no_exact_steps_where_the_factorisations_would_not_fit(monkeypatch):
    """Every problem's factorised Hessian is kept: where they would pass ``FACTOR_BYTES`` (wide features, many
    classes), conjugate gradients run to the end instead, and reach the same weights."""
    X, y = _data(4, seed=6)
    grams = Grams(X, np.ones((len(X), 4)))
    assert np.all(np.isfinite(grams.budgets(np.ones((len(X), 4)), len(X))))
    monkeypatch.setattr(svm_newton, "FACTOR_BYTES", 8 * 11 * 11 * 4 - 1)  # 10 dimensions and the intercept
    assert np.all(np.isinf(grams.budgets(np.ones((len(X), 4)), len(X))))
    monkeypatch.setattr(svm_newton, "MIN_CG", 0)
    wide = SquaredHingeSVC(C=10.0, tol=1e-8).fit(X, y)
    monkeypatch.undo()
    np.testing.assert_allclose(wide.coef_, SquaredHingeSVC(C=10.0, tol=1e-8).fit(X, y).coef_, atol=1e-5)
