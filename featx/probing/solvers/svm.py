"""The svm probe: scikit-learn's ``LinearSVC`` objective (L2-regularised squared hinge, one-vs-rest, the intercept a
feature of value 1 regularised with the weights, as liblinear does), solved by featx's own Newton method.

liblinear solves the classes' one-vs-rest problems one after another, each by coordinate descent (the dual) or a
trust-region Newton method (the primal), over its own sparse copy of the rows. Both slow down by orders of magnitude
at the large Cs of a C search: on 534 TREC rows of 384 dimensions the primal took 5 s at C=1 and 15 s at C=10
(2,000 iterations, unconverged), the dual 2 minutes on 5,952 rows with permuted labels (the control task). Here
every class's problem is solved at once, as a matrix of weights, by a generalised Newton method (the squared
hinge has a piecewise-constant Hessian: ``I + 2 X^T D X``, D the active rows' weights), its steps by conjugate
gradients preconditioned by the Gram matrix or, once those cost more, by each problem's exact Hessian
(``svm_newton``), and a backtracking line search along ``X S`` (no further products).
A C path warm-starts each fit from the previous C's weights.

Stopping rule: liblinear's primal one, per class, ``||g|| <= tol * max(min(pos, neg), 1) / n * ||g(0)||``.
Class weights as liblinear's: in a one-vs-rest problem, the class's rows get ``C * weight[class]``, the other rows
``C``; a binary problem (one margin, positive for ``classes_[1]``) weights each side by its own class.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .softmax_problem import balanced_weights
from .svm_newton import Grams, backward, forward, newton_step

ARMIJO = 1e-2
MAX_HALVINGS = 30
ROUNDING = 1e-14  # a step that lowers the objective by less than this share of it is rounding: the problem is done


class SquaredHingeSVC(ClassifierMixin, BaseEstimator):
    """Linear SVM probe with ``LinearSVC``'s objective and attributes (``coef_``, ``intercept_``, ``classes_``,
    ``decision_function``, ``predict``); ``warm_start`` reuses the previous fit's weights as the start."""

    def __init__(self, C=1.0, tol=1e-4, max_iter=1000, class_weight=None, warm_start=False, random_state=None):
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state  # kept for LinearSVC's signature; the solver is deterministic

    def fit(self, X, y):
        X = np.asarray(X, dtype=np.float64)
        classes, codes = np.unique(np.asarray(y), return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"the svm probe needs at least 2 classes in the data, got {len(classes)}")
        targets, row_c = self._problems(codes, len(classes))
        start = self._start(X.shape[1], targets.shape[1], classes)
        grams = self._grams(X, row_c)
        params, iterations = solve(X, targets, row_c, start, float(self.tol), int(self.max_iter), grams)
        self.classes_, self.n_features_in_, self.n_iter_ = classes, X.shape[1], iterations
        self.coef_, self.intercept_ = params[:-1].T.copy(), params[-1].copy()
        return self

    def _problems(self, codes: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
        """(targets: ±1 per row and problem, each row's C per problem)."""
        if self.class_weight not in (None, "balanced"):
            raise ValueError("class_weight: only None or 'balanced'")
        own = np.ones(len(codes))  # each row's weight, its class's: n / (k * count) when balanced
        if self.class_weight == "balanced":
            own = len(codes) * balanced_weights(codes, n_classes)
        C = float(self.C)
        if n_classes == 2:
            return np.where(codes == 1, 1.0, -1.0)[:, None], (C * own)[:, None]
        positive = codes[:, None] == np.arange(n_classes)[None, :]
        return np.where(positive, 1.0, -1.0), np.where(positive, C * own[:, None], C)

    def _grams(self, X: np.ndarray, row_c: np.ndarray) -> Grams:
        """The fit's Gram matrices, reused from the previous fit on the same rows (a C path fits the same rows at
        each C: the rows' Grams and the eigendecomposition cost ``n d^2 + d^3`` a fit)."""
        digest = hashlib.blake2b(np.ascontiguousarray(X).data, digest_size=16)
        digest.update(np.ascontiguousarray(row_c / float(self.C)).data)
        key = (X.shape, row_c.shape, digest.hexdigest())
        cached = getattr(self, "_grams_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1].fresh()
        grams = Grams(X, row_c)
        self._grams_cache = (key, grams)
        return grams

    def _start(self, n_features: int, n_problems: int, classes: np.ndarray) -> np.ndarray:
        """The starting weights ((d + 1) x problems): the previous fit's when warm-starting the same classes."""
        previous = getattr(self, "coef_", None)
        if (
            self.warm_start
            and previous is not None
            and previous.shape == (n_problems, n_features)
            and np.array_equal(getattr(self, "classes_", np.zeros(0)), classes)
        ):
            return np.vstack([previous.T, self.intercept_[None, :]])
        return np.zeros((n_features + 1, n_problems))

    def decision_function(self, X) -> np.ndarray:
        scores = np.asarray(X, dtype=np.float64) @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        picked = (scores > 0).astype(np.int64) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[picked]


def _loss(params: np.ndarray, margins: np.ndarray, row_c: np.ndarray) -> np.ndarray:
    """Each problem's objective, from its weights and margins ``1 - y z``."""
    return 0.5 * np.sum(params * params, axis=0) + np.sum(row_c * np.square(np.maximum(margins, 0.0)), axis=0)


def solve(X, targets, row_c, params, tol: float, max_iter: int, grams: Grams | None = None) -> tuple[np.ndarray, int]:
    """Minimise every problem's ``0.5 ||p||^2 + sum_i c_i max(0, 1 - y_i (x_i w + b))^2`` from ``params``;
    returns the weights ((d + 1) x problems, the intercept last) and the Newton iterations taken."""
    params = params.copy()
    margins = 1.0 - targets * forward(X, params)
    n = len(X)
    positives = np.sum(targets > 0, axis=0)
    scale = np.maximum(np.minimum(positives, n - positives), 1) / n
    first = np.linalg.norm(backward(X, -2.0 * row_c * targets), axis=0)  # the gradient at zero
    grams = Grams(X, row_c) if grams is None else grams
    iteration, stalled = 0, np.zeros(targets.shape[1], dtype=bool)
    for iteration in range(1, max_iter + 1):
        active = margins > 0
        gradient = params - 2.0 * backward(X, row_c * targets * margins * active)
        todo = (np.linalg.norm(gradient, axis=0) > tol * scale * first) & ~stalled
        if not todo.any():
            return params, iteration - 1
        curvature = 2.0 * row_c * active * todo  # problems done take no step
        step = newton_step(X, curvature, np.where(todo, gradient, 0.0), grams)
        params, margins, moved = _line_search(params, margins, step, gradient, targets, row_c, X)
        stalled |= todo & ~moved  # no decrease left above rounding: as close as float64 gets
    from sklearn.exceptions import ConvergenceWarning

    warnings.warn(f"svm probe: not converged in {max_iter} Newton iterations", ConvergenceWarning, stacklevel=3)
    return params, iteration


def _line_search(params, margins, step, gradient, targets, row_c, X):
    """Backtracking (Armijo) along ``step`` for every problem; the margins move by ``-y X s`` (one product).
    Returns the new weights and margins, and which problems moved."""
    moved = targets * forward(X, step)
    before = _loss(params, margins, row_c)
    slope = np.sum(gradient * step, axis=0)
    t = np.ones(step.shape[1])
    searching = slope < 0
    trial = before
    for _ in range(MAX_HALVINGS):
        trial = _loss(params + t * step, margins - t * moved, row_c)
        accepted = trial <= before + ARMIJO * t * slope
        searching &= ~accepted
        if not searching.any():
            break
        t = np.where(searching, t / 2, t)
    t = np.where((slope < 0) & ~searching, t, 0.0)  # a problem with no accepted step stays where it is
    gained = before - trial > ROUNDING * np.abs(before)  # a decrease float64 can still tell from rounding
    return params + t * step, margins - t * moved, (t > 0) & gained
