"""L2-regularised multinomial logistic regression for probes: many problems on one matrix, solved together.

Probing fits the same standardised features many times: the real labels and the control task's
permuted labels on every fold, each along a path of C values. One fit is bound by streaming the
(rows x dims) float32 matrix through memory twice per L-BFGS step, not by arithmetic, so problems
that share the matrix are evaluated together, their matrix products back to back while the matrix
is in cache. Each problem keeps its own L-BFGS history, line search and stopping test, and every
operation on it is the same whatever else is in the batch: its solution is bit for bit the one it
gets alone (the probe's result does not depend on whether the control task ran). ``solve(joint=True)``
trades that for speed where the matrix is large (word probes at treebank scale): one matrix product for
all problems per pass.

The objective is scikit-learn's ``LogisticRegression`` (lbfgs) objective: mean (or weighted) log-loss
plus ``||W||^2 / (2 C n)``, intercepts unpenalised; with two classes, the binomial model's (the
symmetric softmax parametrisation then needs twice the penalty). ``SoftmaxRegression`` wraps it as
a scikit-learn style estimator for the single fits (stacking, MDL, learning curves).

This is the CPU solver. ``softmax_torch.py`` solves the same problem (``softmax_problem.py``) with the
same L-BFGS on a GPU; ``solve`` hands over to it when a probing run solves on one (``devices.py``).
"""

from __future__ import annotations

from functools import partial

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .devices import current_device
from .softmax_problem import (
    ARMIJO,
    FTOL,
    MAX_HALVINGS,
    MEMORY,
    Preconditioner,
    Solution,
    balanced_weights,  # noqa: F401 (API)
    class_scores,
    prepare,
)
from .softmax_sparse import SparseObjective, SparseRows, is_sparse


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = scores - scores.max(axis=1, keepdims=True)
    np.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=1, keepdims=True)
    return shifted


class _Objective:
    """Loss and gradient of P problems sharing ``X`` (or each with its own: a stacked ``(P, n, d)`` X); rows of the
    class-score matrix are contiguous in the rows of X, so the reductions over classes are plain vector operations."""

    def __init__(
        self,
        X: np.ndarray,
        codes: np.ndarray,
        weights: np.ndarray | None,
        lam: np.ndarray,
        offsets: np.ndarray,
        joint: bool = False,
    ):
        self.X = X
        self.joint = joint  # one (P*k, d) product per pass over X instead of P (k, d) products
        self.n, self.d = X.shape[-2:]
        self.stacked = X.ndim == 3  # problem p's rows are X[p]: the same products, one matrix each
        self.codes = codes  # (P, n) class codes
        self.weights = weights  # (P, n) summing to 1 per problem, or None (1/n each)
        self.lam = lam  # (P,) L2 strength on the weights
        self.offsets = offsets.astype(np.float32)  # (P, k) 0 or -inf
        # (P, n) positions of each row's true class score in a problem's flattened (k, n) score block: one
        # plain gather and scatter instead of 3-array fancy indexing (3.6x faster on 2 x 4 x 5,400 scores)
        self.true_positions = codes * self.n + np.arange(self.n)

    def __call__(self, theta: np.ndarray, problems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X, n, d = self.X, self.n, self.d
        if self.stacked and len(problems) < len(X):
            X = X[problems]  # the matrices of the problems evaluated (in order: every caller's ids ascend)
        P, _, k = theta.shape
        weights = np.ascontiguousarray(theta[:, :d, :].transpose(0, 2, 1), dtype=np.float32)  # (P, k, d)
        scores3 = class_products(X, weights, self.joint)
        scores3 += (theta[:, d, :].astype(np.float32) + self.offsets[problems])[:, :, None]
        scores3 -= scores3.max(axis=1, keepdims=True)
        flat = scores3.reshape(-1)  # a view: scores3 is contiguous
        positions = self.true_positions[problems] + (np.arange(P) * (k * n))[:, None]
        true = flat[positions]  # (P, n) the true class's score
        np.exp(scores3, out=scores3)
        total = scores3.sum(axis=1, keepdims=True)
        nll = np.log(total[:, 0, :]) - true  # (P, n)
        scores3 /= total  # now probabilities
        flat[positions] -= 1.0  # now d loss / d score
        if self.weights is None:
            loss = nll.sum(axis=1, dtype=np.float64) / n
            scores3 *= np.float32(1.0 / n)
        else:
            weights = self.weights[problems]
            loss = (nll * weights).sum(axis=1, dtype=np.float64)
            scores3 *= weights[:, None, :]
        grad = np.empty_like(theta)
        lam = self.lam[problems]
        products = (scores3.reshape(P * k, n) @ X).reshape(P, k, d) if self.joint else scores3 @ X
        grad[:, :d, :] = products.transpose(0, 2, 1) + lam[:, None, None] * theta[:, :d, :]
        grad[:, d, :] = scores3.sum(axis=2, dtype=np.float64)
        loss = loss + 0.5 * lam * np.einsum("pdk,pdk->p", theta[:, :d, :], theta[:, :d, :])
        return loss, grad


def class_products(X: np.ndarray, weights: np.ndarray, joint: bool = False) -> np.ndarray:
    """The ``(P, k, n)`` class scores ``weights @ X.T`` of ``weights`` ``(P, k, d)`` over the rows of ``X`` (a
    stacked ``(P, n, d)`` X: each problem's own rows, the same product per problem).

    One matrix product per problem (a stacked matmul), back to back while X is still in cache, so that a
    problem's rounding never depends on the others; ``joint``: one (P*k, d) product, which fills the BLAS
    kernel's panels better (k = 17 classes is one 16-row panel and 1 row) and reads X once for all
    problems, but rounds each problem's scores according to P. Either is computed as ``X @ W.T`` with X
    untransposed, then transposed: the same dot products (equal to ``weights @ X.T`` on OpenBLAS), but
    BLAS runs ``W @ X.T`` with a transposed X 1.3 to 2.5x slower (thin k, as in probes: 2.3 against 0.9 ms
    per problem on 5,400 x 384 rows, 4 classes), which was most of a sentence probe's C path.
    """
    P, k, d = weights.shape
    if joint:
        return np.ascontiguousarray((X @ weights.reshape(P * k, d).T).T).reshape(P, k, len(X))
    return np.ascontiguousarray(np.matmul(X, weights.transpose(0, 2, 1)).transpose(0, 2, 1))


def _direction(g: np.ndarray, history: _History, live: np.ndarray, scale=None):
    """The L-BFGS search direction of every live problem (two-loop recursion, all at once), its slope,
    and which problems start afresh (no history, or a stale one restarted from steepest descent).
    ``scale``: the starting matrix as a function of vectors (a ``Preconditioner``'s), else the identity;
    a preconditioned fresh start takes the full step, as its direction is already scaled.

    Only the slots some live problem has filled are visited (``_History.depth``): an empty slot's ``rho`` is 0,
    so it adds exact zeros to ``q`` and ``r``, and skipping it leaves every direction bit for bit the same (each
    new C of a path starts with an empty history, so early iterations skip most of the ten)."""
    q = g.copy()
    alphas = []
    depth = history.depth(live)
    for j in range(depth):
        s_j, y_j, rho_j = history.pair(live, j)
        alpha = rho_j * np.einsum("pd,pd->p", s_j, q)
        q -= alpha[:, None] * y_j
        alphas.append(alpha)
    s_0, y_0, rho_0 = history.pair(live, 0)
    fresh = rho_0 == 0
    sy = np.einsum("pd,pd->p", s_0, y_0)
    scaled_y = y_0 if scale is None else scale(y_0)
    yy = np.einsum("pd,pd->p", y_0, scaled_y)
    gamma = np.where(fresh, 1.0, sy / np.where(yy > 0, yy, 1.0))
    r = gamma[:, None] * (q if scale is None else scale(q))
    for j in reversed(range(depth)):
        s_j, y_j, rho_j = history.pair(live, j)
        beta = rho_j * np.einsum("pd,pd->p", y_j, r)
        r += s_j * (alphas[j] - beta)[:, None]
    direction = -r
    slope = np.einsum("pd,pd->p", direction, g)
    uphill = slope >= 0
    if uphill.any():  # a stale history: restart those problems from steepest descent
        direction[uphill] = -g[uphill]
        slope[uphill] = -np.einsum("pd,pd->p", g[uphill], g[uphill])
        history.rho[live[uphill]] = 0
        fresh = fresh | uphill
    return direction, slope, (fresh if scale is None else uphill)


class _History:
    """The L-BFGS step pairs of P problems, ``MEMORY`` slots each: a ring per problem whose logical slot 0 is
    the newest pair (at ``head``), so that remembering a pair writes one slot instead of moving the others
    (on the lexical baseline's 458,000 weights, moving them was a fifth of a fit). ``rho`` 0 marks an empty
    slot; slots fill from logical 0 and a restart empties them all, so a problem's filled slots are its first
    ``count_nonzero(rho)``. A lone problem's pairs are read as views, never copied."""

    def __init__(self, P: int, size: int):
        self.s = np.zeros((P, MEMORY, size))
        self.y = np.zeros((P, MEMORY, size))
        self.rho = np.zeros((P, MEMORY))  # by physical slot
        self.head = np.zeros(P, dtype=np.int64)  # the physical slot of each problem's newest pair

    def depth(self, problems: np.ndarray) -> int:
        """How many slots any of ``problems`` has filled: visiting only those leaves each direction the same."""
        return int(np.count_nonzero(self.rho[problems], axis=1).max(initial=0))

    def pair(self, live: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Logical slot ``j`` of each of the ``live`` problems: ``(s, y, rho)``, (P, size), (P, size) and (P,)."""
        slots = (self.head[live] + j) % MEMORY
        if len(live) == 1:
            p, slot = int(live[0]), int(slots[0])
            return self.s[p, slot][None], self.y[p, slot][None], self.rho[p, slot : slot + 1]
        return self.s[live, slots], self.y[live, slots], self.rho[live, slots]

    def remember(self, ids: np.ndarray, s: np.ndarray, y: np.ndarray) -> None:
        """Make the step pairs with positive curvature their problems' newest (a full ring's oldest goes)."""
        curvature = np.einsum("pd,pd->p", s, y)
        keep = curvature > 1e-10 * np.einsum("pd,pd->p", y, y)
        update = ids[keep]
        if len(update):
            self.head[update] = (self.head[update] - 1) % MEMORY
            slots = self.head[update]
            self.s[update, slots] = s[keep]
            self.y[update, slots] = y[keep]
            self.rho[update, slots] = 1.0 / curvature[keep]


def _line_search(objective: _Objective | SparseObjective, theta, loss, live, direction, slope, step):
    """Backtracking (Armijo) line search; each round evaluates the problems still searching together.
    Returns the accepted losses and gradients, and the positions in ``live`` that found no decrease."""
    shape, size = theta.shape[1:], direction.shape[1]
    new_loss, new_grad = np.empty(len(live)), np.empty((len(live), size))
    searching = np.arange(len(live))
    for _ in range(MAX_HALVINGS):
        ids = live[searching]
        trial = theta[ids] + (step[searching, None] * direction[searching]).reshape(len(ids), *shape)
        trial_loss, trial_grad = objective(trial, ids)
        ok = trial_loss <= loss[ids] + ARMIJO * step[searching] * slope[searching]
        new_loss[searching[ok]] = trial_loss[ok]
        new_grad[searching[ok]] = trial_grad.reshape(len(ids), size)[ok]
        searching = searching[~ok]
        if not len(searching):
            break
        step[searching] *= 0.5
    return new_loss, new_grad, searching


def _lbfgs(objective: _Objective | SparseObjective, theta: np.ndarray, tol: float, max_iter: int, preconditioner=None):
    """Minimise every problem; evaluations of all problems still moving are batched into one call."""
    P, shape = theta.shape[0], theta.shape[1:]
    size = int(np.prod(shape))
    loss, grad = objective(theta, np.arange(P))
    grad = grad.reshape(P, size)
    history = _History(P, size)
    n_iter = np.zeros(P, dtype=np.int64)
    converged = np.abs(grad).max(axis=1) <= tol
    active = ~converged
    for _ in range(max_iter):
        live = np.flatnonzero(active)
        if not len(live):
            break
        scale = None if preconditioner is None else partial(preconditioner.apply, lam=objective.lam[live], k=shape[1])
        direction, slope, fresh = _direction(grad[live], history, live, scale)
        step = np.ones(len(live))
        step[fresh] = np.minimum(1.0, 1.0 / np.sqrt(np.maximum(-slope[fresh], 1e-300)))
        new_loss, new_grad, searching = _line_search(objective, theta, loss, live, direction, slope, step)
        stalled = np.zeros(len(live), dtype=bool)
        stalled[searching] = True
        active[live[stalled]] = False  # no decrease left at float precision: as good as it gets
        moved = np.flatnonzero(~stalled)
        ids = live[moved]
        s = step[moved, None] * direction[moved]
        y = new_grad[moved] - grad[ids]
        theta[ids] += s.reshape(len(ids), *shape)
        history.remember(ids, s, y)
        decrease = (loss[ids] - new_loss[moved]) / np.maximum(
            np.maximum(np.abs(loss[ids]), np.abs(new_loss[moved])), 1.0
        )
        loss[ids], grad[ids] = new_loss[moved], new_grad[moved]
        n_iter[ids] += 1
        small = np.abs(grad[ids]).max(axis=1) <= tol
        converged[ids] = small | (decrease <= FTOL)
        active[ids] = ~converged[ids]
    return theta, n_iter, converged


def solve(
    X: np.ndarray,
    labels,
    n_classes: int,
    Cs,
    balanced: bool = False,
    init=None,
    tol: float = 1e-3,
    max_iter: int = 500,
    device: str | None = None,
    joint: bool = False,
    preconditioner: Preconditioner | None = None,
) -> Solution:
    """Fit one softmax regression per label vector in ``labels`` (each over the rows of ``X``).

    ``X``: (n, dims), standardised; or a scipy sparse matrix, solved in float64 on the CPU from the columns'
    second moments (``softmax_sparse``; ``device``, ``joint`` and ``preconditioner`` do not apply); or stacked,
    (P, n, dims), a matrix per label vector of the same shape (the numpy solver batches problems on different
    columns of the same rows as it batches those of one matrix, each solution bit for bit the one it gets alone;
    ``joint`` and ``preconditioner`` do not apply; on a ``device`` each problem is solved alone);
    ``labels``: P integer arrays with codes in ``0..n_classes-1``;
    ``Cs``: P inverse regularisation strengths; ``init``: P starting ``theta`` (None entries: zeros).
    ``device``: a torch device to solve on (``softmax_torch``); None: the one a probing run set
    (``devices.solver_device``), else this module's numpy solver on the CPU. ``joint``: the numpy solver
    evaluates the problems with one matrix product per pass over ``X`` (about 1.4x faster for two problems
    of 17 classes; each solution then agrees with the one it gets alone within ``tol``, not bit for bit).
    ``preconditioner``: L-BFGS's starting matrix from the rows' second moments (``Preconditioner``, numpy
    solver only): the same optimum in a few times fewer passes on correlated features; where the solve
    stops within ``tol`` differs from the plain path.
    """
    if is_sparse(X):
        return _solve_sparse(SparseRows.of(X), labels, n_classes, Cs, balanced, init, tol, max_iter)
    device = current_device() if device is None else device
    if np.ndim(X) == 3 and (device is not None or joint or preconditioner is not None):
        return _solve_each(X, labels, n_classes, Cs, balanced, init, tol, max_iter, device, joint, preconditioner)
    if device is not None:
        from . import softmax_torch

        return softmax_torch.solve(X, labels, n_classes, Cs, balanced, init, tol, max_iter, device)
    problem = prepare(X, labels, n_classes, Cs, balanced, init)
    objective = _Objective(problem.X, problem.codes, problem.weights, problem.lam, problem.offsets, joint)
    theta, n_iter, converged = _lbfgs(objective, problem.theta, tol, max_iter, preconditioner)
    return Solution(theta, problem.offsets, n_iter, converged)


def _solve_each(X, labels, n_classes: int, Cs, balanced, init, *options) -> Solution:
    """``solve`` on a stacked X, each problem alone on its own matrix (as a device or preconditioner needs)."""
    starts = init if init is not None else [None] * len(labels)
    alone = [solve(X[p], [labels[p]], n_classes, [Cs[p]], balanced, [starts[p]], *options) for p in range(len(Cs))]
    fields = ("theta", "offsets", "n_iter", "converged")
    return Solution(*(np.concatenate([getattr(one, name) for one in alone]) for name in fields))


def _solve_sparse(rows: SparseRows, labels, n_classes: int, Cs, balanced, init, tol: float, max_iter: int) -> Solution:
    """``solve`` on a sparse X: on its merged columns (``SparseRows``), the starts reduced to them and the
    solutions expanded back to X's own columns."""
    if init is not None:
        init = [None if start is None else rows.reduce(np.asarray(start, dtype=np.float64)) for start in init]
    problem = prepare(rows, labels, n_classes, Cs, balanced, init, dense=False)
    objective = SparseObjective(rows, problem.codes, problem.weights, problem.lam, problem.offsets)
    theta, n_iter, converged = _lbfgs(objective, problem.theta, tol, max_iter, rows.preconditioner)
    return Solution(np.stack([rows.expand(merged) for merged in theta]), problem.offsets, n_iter, converged)


class SoftmaxRegression(ClassifierMixin, BaseEstimator):
    """L2 multinomial logistic regression on featx's solver, the ``logreg`` probe.

    The scikit-learn ``LogisticRegression(solver="lbfgs")`` objective, in float32 arithmetic on the
    features and float64 on the weights; on a scipy sparse X (the lexical baseline's n-grams), float64
    throughout. ``warm_start`` starts from the previous fit's weights.
    """

    def __init__(
        self, C: float = 1.0, tol: float = 1e-3, max_iter: int = 500, class_weight=None, warm_start: bool = False
    ):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.warm_start = warm_start

    def fit(self, X, y):
        X, classes, codes, init = self._start(X, y)
        balanced, starts = self.class_weight == "balanced", None if init is None else [init]
        solution = solve(X, [codes], len(classes), [self.C], balanced, starts, self.tol, self.max_iter)
        self._set_solution(solution.theta[0], classes, int(solution.n_iter[0]))
        return self

    def _start(self, X, y) -> tuple:
        """``(X, classes, codes, warm start or None)`` of a fit on ``X`` (checked) and ``y`` (what
        ``classifiers.fit_together`` batches the fits of several estimators from)."""
        from sklearn.utils.validation import check_X_y

        if isinstance(X, SparseRows):  # prepared once for the fits that share it
            y = np.asarray(y)
            if y.shape != (X.shape[0],):
                raise ValueError(f"y must hold one label per row of X ({X.shape[0]}), got shape {y.shape}")
        else:
            X, y = check_X_y(X, y, accept_sparse="csr", dtype=np.float64 if is_sparse(X) else np.float32)
        if self.class_weight not in (None, "balanced"):
            raise ValueError("class_weight must be None or 'balanced'")
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"needs at least two classes, got {len(classes)}")
        init = None
        if (
            self.warm_start
            and getattr(self, "theta_", None) is not None
            and self.theta_.shape == ((X.width if isinstance(X, SparseRows) else X.shape[1]) + 1, len(classes))
            and np.array_equal(self.classes_, classes)
        ):
            init = self.theta_
        return X, classes, codes, init

    def _set_solution(self, theta: np.ndarray, classes: np.ndarray, n_iter: int) -> None:
        self.theta_ = theta
        self.classes_ = classes
        self.coef_ = theta[:-1].T.copy()
        self.intercept_ = theta[-1].copy()
        self.n_features_in_ = theta.shape[0] - 1
        self.n_iter_ = np.array([n_iter])

    def decision_function(self, X) -> np.ndarray:
        from sklearn.utils.validation import check_array, check_is_fitted

        check_is_fitted(self, "theta_")
        if is_sparse(X):  # float64, as it was fitted
            X = check_array(X, accept_sparse="csr", dtype=np.float64)
            return np.asarray(X @ self.theta_[:-1]) + self.theta_[-1]
        return class_scores(check_array(X, dtype=np.float32), self.theta_)

    def predict_proba(self, X) -> np.ndarray:
        return softmax(self.decision_function(X).astype(np.float64))

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]
