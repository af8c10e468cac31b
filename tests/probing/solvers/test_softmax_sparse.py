"""The sparse path of featx's softmax regression (the lexical baseline's solver): scikit-learn's optimum on a
sparse matrix, for several classes, two classes and balanced weights; ``SparseRows`` prepared once gives the
same fit as the matrix itself; the diagonal starting matrix changes the path, not the optimum."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from featx.probing.solvers import softmax, softmax_sparse


def _problem(n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n, d = 300, 500
    X = sparse.random(n, d, density=0.03, random_state=seed, format="csr") * 3.0
    truth = rng.normal(size=(d, n_classes))
    y = np.argmax(np.asarray(X @ truth) + rng.normal(scale=0.5, size=(n, n_classes)), axis=1)
    return X, y


@pytest.mark.parametrize(("n_classes", "balanced", "C"), [(4, False, 10.0), (2, False, 1.0), (3, True, 0.5)])
def test_sparse_fit_reaches_sklearns_optimum(n_classes, balanced, C):
    X, y = _problem(n_classes)
    weight = "balanced" if balanced else None
    ours = softmax.SoftmaxRegression(C=C, tol=1e-10, max_iter=5000, class_weight=weight).fit(X, y)
    reference = LogisticRegression(C=C, tol=1e-10, max_iter=5000, class_weight=weight).fit(X, y)
    assert ours.decision_function(X).dtype == np.float64
    np.testing.assert_allclose(
        softmax.softmax(ours.decision_function(X)), reference.predict_proba(X), atol=1e-6, rtol=0
    )
    np.testing.assert_array_equal(ours.predict(X), reference.predict(X))


def test_sparse_rows_prepared_once_fit_as_the_matrix_does():
    X, y = _problem(4, seed=1)
    rows = softmax_sparse.SparseRows.of(X)
    assert softmax_sparse.SparseRows.of(rows) is rows
    plain = softmax.SoftmaxRegression(C=2.0, tol=1e-6).fit(X, y)
    prepared = softmax.SoftmaxRegression(C=2.0, tol=1e-6).fit(rows, y)
    np.testing.assert_array_equal(prepared.theta_, plain.theta_)
    X.data[:] = 0.0  # the prepared rows are a copy: later changes to the caller's matrix do not reach them
    assert rows.rows.nnz and np.abs(rows.rows.data).sum() > 0
    with pytest.raises(ValueError, match="one label per row"):
        softmax.SoftmaxRegression().fit(rows, y[:-1])


def test_warm_start_on_sparse_rows_continues_from_the_previous_fit():
    X, y = _problem(3, seed=2)
    model = softmax.SoftmaxRegression(C=0.1, tol=1e-6, warm_start=True).fit(X, y)
    cold = softmax.SoftmaxRegression(C=1.0, tol=1e-6).fit(X, y)
    model.set_params(C=1.0).fit(X, y)
    assert model.n_iter_[0] < cold.n_iter_[0]
    np.testing.assert_allclose(model.decision_function(X), cold.decision_function(X), atol=1e-3)


def test_the_diagonal_starting_matrix_changes_the_path_not_the_optimum():
    X, y = _problem(4, seed=3)
    problem = softmax.prepare(softmax_sparse.SparseRows.of(X), [y], 4, [5.0], dense=False)
    objective = softmax_sparse.SparseObjective(problem.X, problem.codes, None, problem.lam, problem.offsets)
    plain, _, _ = softmax._lbfgs(objective, problem.theta.copy(), 1e-9, 5000)
    scaled, _, _ = softmax._lbfgs(objective, problem.theta.copy(), 1e-9, 5000, problem.X.preconditioner)
    np.testing.assert_allclose(scaled, plain, atol=1e-5)
    X = X.tolil()
    X[:, [0, 7, X.shape[1] - 1]] = 0.0  # empty columns, the first and last among them
    X = X.tocsr()
    moments = softmax_sparse.DiagonalPreconditioner.from_rows(X).moments
    np.testing.assert_allclose(moments[:-1], np.asarray(X.multiply(X).mean(axis=0)).ravel(), rtol=1e-12)
    assert moments[0] == moments[7] == moments[-2] == 0.0
    assert moments[-1] == 1.0  # the intercept's column of ones


def test_a_sparse_x_is_solved_on_the_cpu_whatever_the_device(monkeypatch):
    X, y = _problem(2, seed=4)
    monkeypatch.setattr(softmax, "current_device", lambda: "cuda:0")  # as a GPU run sets it
    solution = softmax.solve(X, [y], 2, [1.0], tol=1e-6)
    assert solution.converged.all()


def test_identical_columns_are_grouped_exactly():
    X, _ = _problem(3, seed=5)
    X = sparse.hstack([X, X[:, :40], X[:, 10:20] * 2.0, X[:, :40]]).tocsc()  # 80 copies, 10 scaled columns
    X = X.tolil()
    X[:, [3, 589]] = 0.0  # two empty columns: a group of their own
    columns = X.tocsc()
    columns.sort_indices()
    keep, group = softmax_sparse.identical_columns(columns)
    dense = columns.toarray()
    for j in range(dense.shape[1]):  # a column and its group's first column are equal, and only then grouped
        np.testing.assert_array_equal(dense[:, j], dense[:, keep[group[j]]])
    assert len(np.unique(dense.T, axis=0)) == len(keep)
    assert group[3] == group[589] and keep[group[589]] == 3
    scaled = np.arange(540, 550)
    assert all(keep[group[j]] == j for j in scaled)  # twice a column is not the column


def test_a_differing_entry_of_equal_length_keeps_columns_apart():
    columns = sparse.csc_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [2.0, 3.0, 2.0]]))
    same = softmax_sparse._same_entries(columns, np.array([1, 2]), np.array([0, 0]))
    np.testing.assert_array_equal(same, [False, False])
    keep, _ = softmax_sparse.identical_columns(columns)
    np.testing.assert_array_equal(keep, [0, 1, 2])


def test_merged_columns_solve_for_the_same_optimum_and_map_back():
    X, y = _problem(4, seed=6)
    X = sparse.hstack([X, X[:, :60], X[:, :60]]).tocsr()  # 60 columns three times over
    rows = softmax_sparse.SparseRows.of(X)
    assert rows.width == X.shape[1] and rows.shape[1] == X.shape[1] - 120
    merged = np.random.default_rng(0).normal(size=(rows.shape[1] + 1, 4))
    np.testing.assert_allclose(rows.reduce(rows.expand(merged)), merged, atol=1e-12)
    ours = softmax.SoftmaxRegression(C=3.0, tol=1e-10, max_iter=5000).fit(X, y)
    reference = LogisticRegression(C=3.0, tol=1e-10, max_iter=5000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_ - reference.coef_.mean(axis=0), atol=1e-5)
    np.testing.assert_array_equal(ours.coef_[:, :60], ours.coef_[:, -60:])  # copies share their weight
    warm = softmax.SoftmaxRegression(C=1.0, tol=1e-8, warm_start=True).fit(rows, y)
    assert warm.coef_.shape == (4, X.shape[1])
    warm.set_params(C=3.0).fit(rows, y)  # warm-started on the prepared rows: the same optimum
    np.testing.assert_allclose(warm.coef_, ours.coef_, atol=1e-4)
