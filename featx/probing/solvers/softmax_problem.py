"""What featx's two softmax-regression solvers share: the L-BFGS settings, the problem they solve (built
once from the caller's arguments, checked), and the ``Solution`` they return.

``softmax.py`` solves it in numpy on the CPU, ``softmax_torch.py`` in torch on a device; both import
this module, which imports neither torch nor the other solver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MEMORY = 10  # L-BFGS history pairs
ARMIJO = 1e-4
MAX_HALVINGS = 40
FTOL = 64 * np.finfo(float).eps  # scipy's L-BFGS-B default, as scikit-learn uses it


@dataclass
class Solution:
    """``theta[p]`` is problem p's ``(dims + 1, n_classes)`` weights, last row the intercepts.

    ``offsets[p, c]`` is ``-inf`` for a class that problem p never saw while fitting (never predicted).
    """

    theta: np.ndarray
    offsets: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray

    def scores(self, X: np.ndarray, problem: int) -> np.ndarray:
        return class_scores(X, self.theta[problem], self.offsets[problem])


def class_scores(X: np.ndarray, theta: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
    """``(n, n_classes)`` linear class scores of float32 rows ``X`` under ``theta``."""
    d = theta.shape[0] - 1
    scores = X @ theta[:d].astype(np.float32) + theta[d].astype(np.float32)
    return scores if offsets is None else scores + offsets.astype(np.float32)


def balanced_weights(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-row weights n / (k * count[class]) over the k present classes, divided by n (they sum to 1)."""
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    present = counts > 0
    per_class = np.zeros(n_classes)
    per_class[present] = 1.0 / (present.sum() * counts[present])
    return per_class[y]


def null_model(y: np.ndarray, n_classes: int, dims: int, balanced: bool = False) -> np.ndarray:
    """The ``(dims + 1, n_classes)`` weights of the intercept-only optimum: zero weights, intercepts at the
    log class frequencies of ``y`` (centred; equal under balanced weights), a start nearer any strongly
    regularised solution than zeros."""
    theta = np.zeros((dims + 1, n_classes))
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    present = counts > 0
    if not balanced and present.any():
        logs = np.log(counts[present] / counts.sum())
        theta[dims, present] = logs - logs.mean()
    return theta


@dataclass(frozen=True)
class Preconditioner:
    """The L-BFGS starting matrix ``(S + max(CURVATURE * lam, FLOOR) * I)^-1`` of a problem with L2 strength
    ``lam``, from ``S``, the second moments of the rows ``[x, 1]`` (weights and intercept), as its eigenvectors
    ``V`` and eigenvalues ``e``. Standardised hidden states are strongly correlated (condition numbers of 1e3
    and more once the penalty is added), which is what costs plain L-BFGS its tens of iterations; with this
    starting matrix a problem takes up to a few times fewer. It changes the path, not the optimum."""

    V: np.ndarray  # (d + 1, d + 1)
    e: np.ndarray  # (d + 1,)

    CURVATURE = 4.0  # 1 / 0.25: the largest p (1 - p) of the softmax, against which the penalty is weighed
    ROWS = 20_000  # S from at most this many evenly spaced rows
    # The shift is at least a tenth of the mean eigenvalue (1 for standardised features): where a nearly
    # separable problem's curvature is far below its second moments, a smaller shift makes it slower than
    # plain L-BFGS (measured on planted blobs and on MiniLM's GUM states; 0.1 was never slower).
    FLOOR = 0.1

    @classmethod
    def from_rows(cls, X: np.ndarray, dtype=np.float64) -> Preconditioner:
        """From (at most ``ROWS`` evenly spaced) rows of ``X``; ``dtype``: that of the second moments' product
        (float32: half the time of float64 on sentence fits, where it was a sixth of a fold's fits)."""
        rows = X[:: max(1, -(-len(X) // cls.ROWS))]
        A = np.empty((len(rows), X.shape[1] + 1), dtype=dtype)
        A[:, :-1], A[:, -1] = rows, 1.0
        e, V = np.linalg.eigh((A.T @ A).astype(np.float64) / max(1, len(rows)))
        return cls(V, np.maximum(e, 0.0))

    def apply(self, q: np.ndarray, lam: np.ndarray, k: int) -> np.ndarray:
        """The matrix of each problem (rows of ``q``: flattened ``(d + 1, k)`` blocks; ``lam`` theirs) times q."""
        blocks = q.reshape(len(q), -1, k)
        inverse = 1.0 / (self.e[None, :] + np.maximum(self.CURVATURE * lam[:, None], self.FLOOR))  # (P, d + 1)
        return (self.V @ (inverse[:, :, None] * (self.V.T @ blocks))).reshape(q.shape)


@dataclass
class Problem:
    """P softmax regressions over the rows of one matrix, ready for a solver."""

    X: Any  # (n, d) float32, C-contiguous (or (P, n, d): a matrix per problem); or a sparse X as ``SparseRows``
    codes: np.ndarray  # (P, n) int64 class codes
    weights: np.ndarray | None  # (P, n) row weights summing to 1 per problem (float32; float64 with a sparse X)
    lam: np.ndarray  # (P,) L2 strength on the weights (not the intercepts)
    offsets: np.ndarray  # (P, k) 0, or -inf for a class the problem never sees
    theta: np.ndarray  # (P, d + 1, k) float64 starting weights


def prepare(X: Any, labels, n_classes: int, Cs, balanced: bool = False, init=None, dense: bool = True) -> Problem:
    """The ``Problem`` of ``solve``'s arguments (see ``softmax.solve``); ValueError when they disagree.
    ``dense``: X is made a float32 array (row weights float32); False: X is used as given, a sparse X prepared by
    ``softmax_sparse.SparseRows`` (row weights float64)."""
    X = np.ascontiguousarray(X, dtype=np.float32) if dense else X
    codes = np.stack([np.asarray(y, dtype=np.int64) for y in labels])
    P, n = codes.shape
    (rows, d), k = X.shape[-2:], n_classes
    Cs = np.asarray(Cs, dtype=np.float64)
    if len(X.shape) == 3 and X.shape[0] != P:
        raise ValueError(f"{P} label vectors need {P} stacked matrices, got {X.shape[0]}")
    if n != rows or Cs.shape != (P,) or (init is not None and len(init) != P):
        raise ValueError(
            f"{P} label vectors of {n} rows need {rows} rows of X, {P} Cs and {P} starts; "
            f"got {rows} rows, {Cs.size} Cs" + ("" if init is None else f", {len(init)} starts")
        )
    if codes.size and (codes.min() < 0 or codes.max() >= k):
        raise ValueError(f"class codes must lie in 0..{k - 1}")
    counts = np.stack([np.bincount(row, minlength=k) for row in codes])
    present = counts > 0
    offsets = np.where(present, 0.0, -np.inf)
    # Two present classes: the binomial model's penalty on (w1 - w0) is half of ||w0||^2 + ||w1||^2.
    factor = np.where(present.sum(axis=1) == 2, 2.0, 1.0)
    lam = factor / (Cs * n)
    weights = np.stack([balanced_weights(row, k) for row in codes]) if balanced else None
    if weights is not None and dense:
        weights = weights.astype(np.float32)
    theta = np.zeros((P, d + 1, k))
    for p, start in enumerate(init if init is not None else [None] * P):
        if start is not None:
            theta[p] = start
    for p in range(P):
        theta[p][:, ~present[p]] = 0.0  # an absent class keeps zero weights (its gradient is zero)
    return Problem(X, codes, weights, lam, offsets, theta)
