"""featx's softmax regression: scikit-learn's objective and solutions, and batched fits that do not
depend on what they were batched with."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from support.blobs import blobs

from featx.probing.solvers import softmax
from featx.probing.solvers.classifiers import fit_together, logreg_from
from featx.probing.solvers.softmax import SoftmaxRegression


def sklearn_objective(model, X, y, C, weights=None):
    """sklearn's lbfgs objective at ``model``'s solution: mean (weighted) log-loss + ||W||^2 / (2 C n)."""
    proba = np.clip(model.predict_proba(X.astype(np.float64)), 1e-300, None)
    index = np.searchsorted(model.classes_, y)
    nll = -np.log(proba[np.arange(len(y)), index])
    weights = np.full(len(y), 1 / len(y)) if weights is None else weights
    coef = model.coef_
    if len(coef) == 2:  # the symmetric softmax form of a binomial model: its weights are coef[1] - coef[0]
        coef = coef[1] - coef[0]
    return float((nll * weights).sum() + (coef**2).sum() / (2 * C * len(y)))


@pytest.mark.parametrize(
    "k, C, balanced", [(3, 0.1, False), (4, 10.0, False), (2, 0.05, False), (2, 1.0, False), (3, 0.1, True)]
)
def test_same_solution_as_scikit_learn(k, C, balanced):
    X, y = blobs(k=k)
    if balanced:
        keep = (y != 0) | (np.arange(len(y)) % 4 == 0)  # class 0 rare
        X, y = X[keep], y[keep]
    weight = "balanced" if balanced else None
    ours = SoftmaxRegression(C=C, tol=1e-8, max_iter=2000, class_weight=weight).fit(X, y)
    theirs = LogisticRegression(C=C, tol=1e-10, max_iter=5000, class_weight=weight).fit(X.astype(np.float64), y)
    assert np.array_equal(ours.classes_, theirs.classes_)
    assert np.mean(ours.predict(X) == theirs.predict(X)) >= 0.995
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=2e-3)
    if not balanced:
        # The same objective value at both solutions.
        assert abs(sklearn_objective(ours, X, y, C) - sklearn_objective(theirs, X, y, C)) < 1e-5


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5)).astype(np.float32)
    codes = rng.integers(0, 3, (2, 40))
    weights = rng.random((2, 40)).astype(np.float32)
    weights /= weights.sum(axis=1, keepdims=True)
    objective = softmax._Objective(X, codes, weights, np.array([0.1, 0.3]), np.zeros((2, 3)))
    theta = rng.normal(size=(2, 6, 3))
    _, grad = objective(theta, np.arange(2))
    numeric = np.zeros_like(theta)
    for index in np.ndindex(theta.shape):
        step = np.zeros_like(theta)
        step[index] = 1e-3
        numeric[index] = (
            objective(theta + step, np.arange(2))[0][index[0]] - objective(theta - step, np.arange(2))[0][index[0]]
        ) / 2e-3
    np.testing.assert_allclose(grad, numeric, atol=2e-4)


def test_batched_problems_are_solved_as_if_alone():
    X, y = blobs(k=4, seed=2)
    permuted = np.random.default_rng(3).permutation(y)
    together = softmax.solve(X, [y, permuted], 4, [0.1, 1.0])
    for p, (labels, C) in enumerate(((y, 0.1), (permuted, 1.0))):
        alone = softmax.solve(X, [labels], 4, [C])
        assert together.n_iter[p] == alone.n_iter[0]
        np.testing.assert_array_equal(together.theta[p], alone.theta[0])  # bit for bit
    assert together.converged.all()


def test_estimators_fitted_together_are_fitted_as_if_alone():
    """classifiers.fit_together (the MDL code's real and control probes): each estimator's solution is bit for bit its
    own fit's, warm starts included, whatever it was batched with; fits of fewer classes form their own batch."""
    X, y = blobs(k=4, seed=2)
    labels = [y, np.random.default_rng(3).permutation(y), np.where(y == 3, 2, y) + 5]  # the last: 3 classes, 5..7
    alone = [SoftmaxRegression(C=C, warm_start=True) for C in (0.1, 1.0, 0.3)]
    together = [SoftmaxRegression(C=C, warm_start=True) for C in (0.1, 1.0, 0.3)]
    for C in (None, 2.0):  # a first fit, then one warm-started at another C
        for model in alone + together:
            model.set_params(C=C or model.C)
        for model, target in zip(alone, labels, strict=True):
            model.fit(X, target)
        fit_together(together, X, labels)
        for one, other in zip(alone, together, strict=True):
            np.testing.assert_array_equal(one.theta_, other.theta_)  # bit for bit
            assert list(one.classes_) == list(other.classes_) and one.n_iter_[0] == other.n_iter_[0]
    assert list(together[2].classes_) == [5, 6, 7] and together[0].n_iter_[0] <= 10  # warm-started


@pytest.mark.parametrize("joint", [False, True])  # True: no joint product over several matrices, each alone
def test_problems_on_matrices_of_their_own_are_solved_as_if_alone(joint):
    """A stacked (P, n, d) X: problem p on X[p] (``featx neurons``' column sets of one size), bit for bit its solve
    alone, including when the batch shrinks to the problems still moving."""
    X, y = blobs(n=200, k=3, seed=4)
    blocks = np.stack([X[:, [0, 1, 2]], X[:, [3, 7, 9]], X[:, [11, 4, 2]]])
    Cs, starts = [0.1, 1.0, 100.0], [None, np.full((4, 3), 0.01), None]
    together = softmax.solve(blocks, [y, y, y[::-1]], 3, Cs, init=starts, joint=joint)
    for p, labels in enumerate((y, y, y[::-1])):
        alone = softmax.solve(blocks[p], [labels], 3, [Cs[p]], init=[starts[p]])
        assert together.n_iter[p] == alone.n_iter[0]
        np.testing.assert_array_equal(together.theta[p], alone.theta[0])
    assert len(set(together.n_iter)) > 1  # the batch did shrink
    with pytest.raises(ValueError, match="3 label vectors need 3 stacked matrices, got 2"):
        softmax.solve(blocks[:2], [y, y, y], 3, Cs)


@pytest.mark.slow
def test_joint_products_agree_with_the_stacked_ones_within_the_tolerance():
    # k = 17 classes, as UPOS: the shape where one (P*k, d) product is faster than P (k, d) ones
    X, y = blobs(n=3000, d=24, k=17, seed=5)
    permuted = np.random.default_rng(6).permutation(y)
    stacked = softmax.solve(X, [y, permuted], 17, [0.1, 1.0], tol=1e-6, max_iter=2000)
    joint = softmax.solve(X, [y, permuted], 17, [0.1, 1.0], tol=1e-6, max_iter=2000, joint=True)
    assert stacked.converged.all() and joint.converged.all()
    np.testing.assert_allclose(joint.theta, stacked.theta, rtol=1e-3, atol=1e-3)
    for p in range(2):
        same = np.argmax(joint.scores(X, p), 1) == np.argmax(stacked.scores(X, p), 1)
        assert same.mean() >= 0.999
    # the objective itself: the same loss and gradient up to float32 rounding
    problem = softmax.prepare(X, [y, permuted], 17, [0.1, 1.0])
    theta = np.random.default_rng(7).normal(scale=0.1, size=problem.theta.shape)
    args = (problem.X, problem.codes, problem.weights, problem.lam, problem.offsets)
    loss_a, grad_a = softmax._Objective(*args)(theta, np.arange(2))
    loss_b, grad_b = softmax._Objective(*args, joint=True)(theta, np.arange(2))
    np.testing.assert_allclose(loss_b, loss_a, rtol=1e-6)
    np.testing.assert_allclose(grad_b, grad_a, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("balanced", [False, True])
def test_the_null_model_is_the_intercept_only_optimum(balanced):
    from featx.probing.solvers.softmax_problem import null_model

    y = np.array([0, 0, 0, 0, 1, 1, 3, 3, 3, 3, 3, 3])  # class 2 absent
    theta = null_model(y, 4, dims=5, balanced=balanced)
    assert theta.shape == (6, 4) and not theta[:5].any() and theta[5, 2] == 0.0
    # the intercept-only model's gradient at it is zero: a constant feature gives the intercept-only problem
    X = np.zeros((len(y), 5), dtype=np.float32)
    problem = softmax.prepare(X, [y], 4, [1.0], balanced, [theta])
    objective = softmax._Objective(problem.X, problem.codes, problem.weights, problem.lam, problem.offsets)
    _, gradient = objective(problem.theta, np.arange(1))
    assert np.abs(gradient).max() < 1e-6  # float32 scores
    probabilities = softmax.softmax(theta[5][[0, 1, 3]][None, :])[0]
    expected = [1 / 3] * 3 if balanced else [4 / 12, 2 / 12, 6 / 12]
    np.testing.assert_allclose(probabilities, expected)


def test_a_class_missing_from_the_fit_is_never_predicted():
    X, y = blobs(k=3, seed=4)
    fit = y != 2
    solution = softmax.solve(X[fit], [y[fit]], 3, [1.0])
    assert np.isneginf(solution.offsets[0, 2]) and not solution.theta[0][:, 2].any()
    assert (solution.scores(X, 0).argmax(axis=1) != 2).all()
    model = logreg_from(solution.theta[0], solution.offsets[0], 1.0, False)
    assert list(model.classes_) == [0, 1] and set(model.predict(X)) <= {0, 1}
    assert model.predict_proba(X).shape == (len(X), 2)


def test_warm_start_continues_from_the_last_fit():
    X, y = blobs(k=3, seed=5)
    model = SoftmaxRegression(C=1.0, warm_start=True).fit(X, y)
    first = model.n_iter_[0]
    model.fit(X, y)
    assert first > 3 and model.n_iter_[0] <= 1


def test_rejects_a_single_class():
    X, _ = blobs()
    with pytest.raises(ValueError, match="at least two classes"):
        SoftmaxRegression().fit(X, np.zeros(len(X), dtype=int))


def _correlated(n=4000, d=40, k=5, seed=8):
    """Blobs seen through a random mixing with a wide spread of scales: standardised, yet correlated."""
    X, y = blobs(n=n, d=d, k=k, seed=seed)
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(d, d)) @ np.diag(np.logspace(0, 2, d))
    X = (X @ mixing).astype(np.float32)
    return ((X - X.mean(0)) / X.std(0)).astype(np.float32), y


def test_the_preconditioner_is_the_inverse_of_the_shifted_second_moments():
    from featx.probing.solvers.softmax_problem import Preconditioner

    X, _ = _correlated(n=500, d=6)
    pre = Preconditioner.from_rows(X)
    A = np.hstack([X, np.ones((len(X), 1))]).astype(np.float64)
    q = np.random.default_rng(0).normal(size=(2, 7 * 3))
    lam = np.array([0.01, 0.5])
    got = pre.apply(q, lam, 3)
    for p in range(2):
        shift = max(Preconditioner.CURVATURE * lam[p], Preconditioner.FLOOR)
        expected = np.linalg.solve(A.T @ A / len(A) + shift * np.eye(7), q[p].reshape(7, 3))
        np.testing.assert_allclose(got[p].reshape(7, 3), expected, rtol=1e-6, atol=1e-8)


def test_a_preconditioned_solve_reaches_the_same_optimum_in_fewer_passes():
    from featx.probing.solvers.softmax_problem import Preconditioner

    X, y = _correlated()
    permuted = np.random.default_rng(9).permutation(y)
    args = (X, [y, permuted], 5, [1.0, 0.1])
    plain = softmax.solve(*args, tol=1e-5, max_iter=5000)
    pre = softmax.solve(*args, tol=1e-5, max_iter=5000, joint=True, preconditioner=Preconditioner.from_rows(X))
    assert plain.converged.all() and pre.converged.all()
    assert 2 * pre.n_iter.sum() <= plain.n_iter.sum()  # correlated features: several times fewer
    # the same optimum: equal objective values (the weights differ along directions the data barely constrains)
    problem = softmax.prepare(*args)
    objective = softmax._Objective(problem.X, problem.codes, problem.weights, problem.lam, problem.offsets)
    losses = [objective(solution.theta, np.arange(2))[0] for solution in (pre, plain)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-3, atol=1e-5)
    for p in range(2):
        assert np.mean(np.argmax(pre.scores(X, p), 1) == np.argmax(plain.scores(X, p), 1)) >= 0.998


@pytest.mark.parametrize("joint", [False, True])
def test_class_products_are_the_class_scores_of_every_problem(joint):
    """``class_products`` (X @ W.T, X untransposed) gives each problem's ``W @ X.T`` in the (P, k, n) layout
    the objective uses, for thin and wider class counts (the same dot products: float32 rounding at most)."""
    rng = np.random.default_rng(11)
    for k in (4, 17):
        X = rng.normal(size=(300, 40)).astype(np.float32)
        weights = rng.normal(size=(2, k, 40)).astype(np.float32)
        products = softmax.class_products(X, weights, joint)
        assert products.shape == (2, k, 300) and products.flags.c_contiguous
        for p in range(2):
            np.testing.assert_allclose(products[p], weights[p] @ X.T, rtol=1e-5, atol=1e-5)


def _full_recursion(g, s_hist, y_hist, rho):
    """The two-loop recursion over all ``MEMORY`` slots, empty ones included (no preconditioner)."""
    q, alphas = g.copy(), []
    for j in range(softmax.MEMORY):
        alpha = rho[:, j] * np.einsum("pd,pd->p", s_hist[:, j], q)
        q -= alpha[:, None] * y_hist[:, j]
        alphas.append(alpha)
    sy = np.einsum("pd,pd->p", s_hist[:, 0], y_hist[:, 0])
    yy = np.einsum("pd,pd->p", y_hist[:, 0], y_hist[:, 0])
    gamma = np.where(rho[:, 0] == 0, 1.0, sy / np.where(yy > 0, yy, 1.0))
    r = gamma[:, None] * q
    for j in reversed(range(softmax.MEMORY)):
        beta = rho[:, j] * np.einsum("pd,pd->p", y_hist[:, j], r)
        r += s_hist[:, j] * (alphas[j] - beta)[:, None]
    return -r


@pytest.mark.parametrize("filled", [(0, 0), (1, 3), (3, 10), (10, 10)])
def test_directions_skip_empty_history_slots_bit_for_bit(filled):
    # the slots some problem has filled are visited; the others (rho 0, stale pairs left in them) add exact zeros
    rng = np.random.default_rng(11)
    P, size = 2, 30
    s_hist, y_hist = rng.normal(size=(P, softmax.MEMORY, size)), rng.normal(size=(P, softmax.MEMORY, size))
    rho = np.zeros((P, softmax.MEMORY))
    for p, count in enumerate(filled):
        rho[p, :count] = 1.0 / np.abs(rng.normal(size=count) + 3.0)
    g = rng.normal(size=(P, size))
    expected = _full_recursion(g, s_hist, y_hist, rho.copy())
    history = softmax._History(P, size)
    history.s[:], history.y[:], history.rho[:] = s_hist, y_hist, rho
    direction, _, _ = softmax._direction(g, history, np.arange(P))
    uphill = np.einsum("pd,pd->p", expected, g) >= 0
    np.testing.assert_array_equal(direction[~uphill], expected[~uphill])
    for p in np.flatnonzero(~uphill):  # a lone problem reads its pairs as views: the same direction
        alone, _, _ = softmax._direction(g[p : p + 1], history, np.array([p]))
        np.testing.assert_array_equal(alone[0], expected[p])


def test_history_pairs_move_to_the_front_and_the_oldest_drops_out():
    rng = np.random.default_rng(12)
    P, size = 2, 6
    history = softmax._History(P, size)
    steps = [rng.normal(size=(P, size)) for _ in range(softmax.MEMORY + 2)]
    for s in steps:
        history.remember(np.arange(P), s, 2.0 * s)  # positive curvature: always kept
    newest_first = steps[::-1][: softmax.MEMORY]
    for live in (np.arange(P), np.array([1])):  # batched (gathered) and alone (views)
        for j, step in enumerate(newest_first):
            s_j, y_j, rho_j = history.pair(live, j)
            np.testing.assert_array_equal(s_j, step[live])
            np.testing.assert_array_equal(y_j, 2.0 * step[live])
            assert np.all(rho_j > 0)
    assert history.depth(np.arange(P)) == softmax.MEMORY
