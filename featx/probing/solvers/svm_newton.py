"""The svm probe's Newton steps: ``(I + X^T D X) s = -g`` for every one-vs-rest problem at once (``X`` with a column
of ones for the intercept, ``D`` each problem's curvature: twice its rows' C where the row is inside its margin).

Two ways to a step, the cheaper one chosen as the fit goes:

- **preconditioned conjugate gradients** on Hessian-vector products (two dense products for all problems, over the
  rows active in some problem), preconditioned by the Gram matrix's eigendecomposition. Cheap while the curvature is
  mild (small C: a handful of products a step);
- **the exact Hessian** of each problem, factorised. At large C the conditioning grows with C and conjugate gradients
  took hundreds of products a step (UD GUM, 7,300 words, 17 tags, C = 10: 130 s a fit). The Hessians are built from
  Gram matrices computed once a fit: rows sharing their C in every problem form a group (one group without class
  weights, a class each when balanced), ``X^T D_k X`` is the groups' Grams weighted by problem k's C minus the
  rows outside its margin, or the rows inside it summed directly, whichever are fewer.

Conjugate gradients run up to the product count that costs as much as the exact step (so a step costs at most about
twice the cheaper way); a problem still running then takes the exact step, and its factorised Hessian preconditions
its later steps, which then take a few products while its margin's rows change little (a problem whose conjugate
gradients outrun the budget again gets a fresh factorisation).
"""

from __future__ import annotations

import numpy as np

CG_TOL = 0.1  # each Newton step solved to a residual of a tenth of the gradient (liblinear's TRON uses the same)
MIN_CG = 10  # conjugate gradients always get this many products before the exact step is considered
FACTOR_BYTES = 512 * 2**20  # the exact steps' factorised Hessians of all problems kept within this (else CG only)


def forward(X: np.ndarray, params: np.ndarray) -> np.ndarray:
    return X @ params[:-1] + params[-1]


def backward(X: np.ndarray, residual: np.ndarray) -> np.ndarray:
    return np.vstack([X.T @ residual, residual.sum(axis=0)[None, :]])


def _outer(X: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``[X 1]^T W [X 1]`` ((d + 1) square), ``W`` the rows' weights (1 when None)."""
    weighted = X if weights is None else X * weights[:, None]
    column = weighted.sum(axis=0) if weights is not None else X.sum(axis=0)
    corner = float(len(X)) if weights is None else float(weights.sum())
    return np.block([[X.T @ weighted, column[:, None]], [column[None, :], np.array([[corner]])]])


class Grams:
    """A fit's Gram matrices: the preconditioner's eigendecomposition, each row group's Gram for the exact Hessians
    (a group: the rows whose C is the same in every problem), and each problem's last exact Hessian, factorised,
    which preconditions its later steps."""

    def __init__(self, X: np.ndarray, row_c: np.ndarray):
        _, self.group = np.unique(row_c, axis=0, return_inverse=True)
        self.group = self.group.ravel()
        self.grams = np.stack([_outer(X[self.group == g]) for g in range(self.group.max() + 1)])
        values, self.vectors = np.linalg.eigh(self.grams.sum(axis=0))
        self.values = np.maximum(values, 0.0)
        self.factors: list[tuple | None] = [None] * row_c.shape[1]

    def fresh(self) -> Grams:
        """The same Grams for another fit of the same rows (another C): without the factorised Hessians."""
        copy = object.__new__(Grams)
        copy.__dict__.update(self.__dict__)
        copy.factors = [None] * len(self.factors)
        return copy

    def budgets(self, curvature: np.ndarray, rows: int) -> np.ndarray:
        """Each problem's exact step in conjugate-gradient products of ``rows`` rows: its Hessian (built from the
        rows inside or outside its margin, the fewer) and the factorisation, over two products' flops; no exact
        steps (an infinite budget) where every problem's factorisation would not fit in ``FACTOR_BYTES``."""
        size = self.vectors.shape[0]
        if 8 * size * size * len(self.factors) > FACTOR_BYTES:  # 17 classes of 4,096 dimensions: 2.3 GB
            return np.full(curvature.shape[1], np.inf)
        active = np.count_nonzero(curvature, axis=0)
        flops = 2.0 * np.minimum(active, curvature.shape[0] - active) * size * size + size**3 / 3.0
        return flops / (4.0 * max(rows, 1) * size)

    def hessian(self, X: np.ndarray, curvature: np.ndarray, problem: int) -> np.ndarray:
        """``I + [X 1]^T D [X 1]`` of one problem."""
        weights = curvature[:, problem]
        active = weights > 0
        if 2 * np.count_nonzero(active) <= len(weights):
            hessian = _outer(X[active], weights[active])
        else:  # most rows inside the margin: the groups' Grams, less the rows outside it
            scale = np.zeros(len(self.grams))
            scale[self.group[active]] = weights[active]  # a group's rows share their weight
            hessian = np.tensordot(scale, self.grams, axes=1)
            outside = ~active & (scale[self.group] > 0)
            if outside.any():
                hessian -= _outer(X[outside], scale[self.group[outside]])
        hessian[np.diag_indices_from(hessian)] += 1.0
        return hessian

    def precondition(self, residual: np.ndarray, columns: np.ndarray, damping: np.ndarray) -> np.ndarray:
        """Each problem's preconditioner applied to its residual: its last exact Hessian where it has one, else
        ``I + m X^T X`` through the Gram matrix's eigenvectors (``damping``: ``1 + m`` times the eigenvalues)."""
        from scipy.linalg import cho_solve

        solved = self.vectors @ ((self.vectors.T @ residual) / damping)
        for index, problem in enumerate(columns):
            factor = self.factors[problem]
            if factor is not None:
                solved[:, index] = cho_solve(factor, residual[:, index], check_finite=False)
        return solved

    def exact_step(self, X: np.ndarray, curvature: np.ndarray, gradient: np.ndarray, problem: int) -> np.ndarray:
        """Solve ``H s = -g`` with the problem's exact Hessian, and keep its factorisation as its preconditioner."""
        from scipy.linalg import LinAlgError, cho_factor, cho_solve

        hessian = self.hessian(X, curvature, problem)
        try:
            self.factors[problem] = cho_factor(hessian, lower=True, check_finite=False)
        except LinAlgError:  # rounding in the Gram corrections: I + X^T D X is positive definite in exact arithmetic
            self.factors[problem] = None
            return np.linalg.lstsq(hessian, -gradient, rcond=None)[0]
        return cho_solve(self.factors[problem], -gradient, check_finite=False)


def newton_step(X: np.ndarray, curvature: np.ndarray, gradient: np.ndarray, grams: Grams) -> np.ndarray:
    """The Newton step of every problem with a non-zero gradient (problems done have a zero gradient and curvature,
    and take no step): preconditioned conjugate gradients, for at most the products its exact step would cost; a
    problem still running then takes the exact step, whose factorisation preconditions its later steps."""
    todo = np.flatnonzero(np.any(gradient != 0, axis=0))
    step = np.zeros_like(gradient)
    if not todo.size:
        return step
    rows = curvature[:, todo].any(axis=1)  # the rows active in some problem: at large C few are, and only they weigh
    budgets = grams.budgets(curvature[:, todo], int(np.count_nonzero(rows)))
    active = curvature[rows][:, todo]
    solved, unfinished = _conjugate_gradients(X[rows], active, gradient[:, todo], grams, todo, budgets)
    step[:, todo] = solved
    for problem in todo[unfinished]:
        step[:, problem] = grams.exact_step(X, curvature, gradient[:, problem], problem)
    return step


def _conjugate_gradients(X, curvature, gradient, grams: Grams, columns, budgets) -> tuple[np.ndarray, np.ndarray]:
    """Preconditioned conjugate gradients, every problem at once, each to ``CG_TOL`` of its gradient or its budget
    of products (``budgets``, at least ``MIN_CG``). The products cover the problems still running only. Returns the
    steps and which problems stopped at their budget, unfinished."""
    damping = 1.0 + grams.values[:, None] * curvature.mean(axis=0)[None, :]
    step = np.zeros_like(gradient)
    residual = -gradient
    limit = (CG_TOL**2) * np.sum(residual * residual, axis=0)
    solved = grams.precondition(residual, columns, damping)
    direction = solved.copy()
    rz = np.sum(residual * solved, axis=0)
    running = np.sum(residual * residual, axis=0) > limit
    unfinished = np.zeros_like(running)
    for spent in range(gradient.shape[0]):
        unfinished |= running & (spent >= np.maximum(budgets, MIN_CG))
        running &= ~unfinished
        if not running.any():
            break
        product = np.zeros_like(direction)
        live = direction[:, running]
        product[:, running] = live + backward(X, curvature[:, running] * forward(X, live))
        denominator = np.sum(direction * product, axis=0)
        alpha = np.where(running, rz / np.where(denominator > 0, denominator, 1.0), 0.0)
        step += alpha * direction
        residual -= alpha * product
        solved = grams.precondition(residual, columns, damping)
        new_rz = np.sum(residual * solved, axis=0)
        direction = solved + np.where(running, new_rz / np.where(rz > 0, rz, 1.0), 0.0) * direction
        rz = new_rz
        running &= np.sum(residual * residual, axis=0) > limit
    return step, unfinished
