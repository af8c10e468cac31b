"""Linear concept erasure: LEACE (closed form) and INLP, fitted on given rows, applied to any rows.

Both erasers have the same affine form ``x' = x - ((x - mean) @ right.T) @ left.T`` with a rank-r edit
(``left``: d x r, ``right``: r x d), so both are stored, applied and described the same way.

- LEACE (Belrose et al. 2023, "LEACE: Perfect linear concept erasure in closed form"): with the
  covariance ``S`` of x, the cross-covariance ``S_xz`` of x and the one-hot label z, the whitening
  ``W = (S^1/2)^+`` and ``U`` an orthonormal basis of the column space of ``W S_xz``, the eraser is
  ``x - W^+ U U^T W (x - mean)``: the least-squares-optimal affine edit after which no linear
  classifier beats a constant one on the fitting rows. Computed in float64; it equals
  ``concept_erasure.LeaceFitter(..., shrinkage=False, constrain_cov_trace=False)`` (tested).
- INLP (Ravfogel et al. 2020, "Null it out"): train a linear probe, project its directions out,
  repeat until a held-out part of the fitting rows is at the majority class (or ``iterations`` ran);
  with the rows' groups (``--group``), that part is whole groups.

Both are fitted within the dimensions that vary on the fitting rows (``live_dimensions``): a dimension
that is constant there (e.g. some of MiniLM's, exactly zero) is left exactly as it was, on every row, and
does not enter the edit. Fitted over all dimensions, rounding leaves a label-correlated residue of ~1e-17
in such a dimension, which a standardizing probe scales up to unit variance and reads the label from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...options import spoken_value
from ...safe_files import atomic_write
from .. import evaluation as ev
from ..solvers import classifiers as clf

METHODS = ("leace", "inlp")
SVD_TOL = 1e-8  # singular values of the whitened cross-covariance below this are not erased
INLP_C = 1.0  # the INLP probes' inverse regularisation (features centred and scaled by one global factor)
INLP_MARGIN = 0.01  # INLP stops once the held-out accuracy is within this of the majority class
# A dimension whose variance on the fitting rows is at most this times the largest one counts as constant
# and is left as it is. An edit's float64 rounding there is ~1e-32 of the largest variance, a millionth of
# the spread at this tolerance: above it the eraser's arithmetic stays clean even once standardized.
VARIANCE_TOL = 1e-20


@dataclass
class Eraser:
    """An affine eraser ``x - ((x - mean) @ right.T) @ left.T`` (see the module docstring)."""

    method: str
    mean: np.ndarray
    left: np.ndarray
    right: np.ndarray
    iterations: int | None = None  # INLP: probes trained (the last one found nothing left to remove)
    history: list[float] = field(default_factory=list)  # INLP: held-out accuracy of each iteration's probe

    @property
    def rank(self) -> int:
        return int(self.left.shape[1])

    @property
    def projection(self) -> np.ndarray:
        """The ``(d, d)`` matrix ``P`` with ``x' - mean = (x - mean) @ P.T``."""
        return np.eye(len(self.mean)) - self.left @ self.right

    def __call__(self, X: np.ndarray) -> np.ndarray:
        delta = np.asarray(X, dtype=np.float64) - self.mean
        return (np.asarray(X, dtype=np.float64) - (delta @ self.right.T) @ self.left.T).astype(np.float32)

    def settings(self) -> dict:
        out = {"method": self.method, "rank": self.rank}
        if self.iterations is not None:
            out.update(iterations=self.iterations, history=[round(float(a), 6) for a in self.history])
        return out


def save_erasers(erasers: dict[str, Eraser], path) -> None:
    """Every eraser's affine map in one ``.npz`` (``KEY/mean``, ``KEY/left``, ``KEY/right``). This is the
    hook for a later intervention in the forward pass: the same map applies to any ``(..., d)`` states
    (e.g. in a forward hook at a site, ``featx/extraction/forward/sites.py``), though a pooled eraser is
    fitted on pooled vectors, not on token states."""
    arrays = {
        f"{key}/{part}": getattr(eraser, part) for key, eraser in erasers.items() for part in ("mean", "left", "right")
    }
    atomic_write(Path(path), lambda handle: np.savez(handle, **arrays))  # never through a link planted there


def load_erasers(path) -> dict[str, Eraser]:
    with np.load(path) as data:
        keys = sorted({name.rsplit("/", 1)[0] for name in data.files})
        return {key: Eraser("loaded", data[f"{key}/mean"], data[f"{key}/left"], data[f"{key}/right"]) for key in keys}


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((len(y), n_classes))
    out[np.arange(len(y)), y] = 1.0
    return out


def shrunk_covariance(centred: np.ndarray) -> np.ndarray:
    """Optimal linear shrinkage of the sample covariance towards a multiple of the identity (the
    estimator ``concept_erasure`` uses by default): keeps directions the fitting rows barely span
    (e.g. float16 rounding noise) from being whitened into huge values."""
    n, p = centred.shape
    sample = centred.T @ centred / n
    sample = (sample + sample.T) / 2
    eps = np.finfo(np.float64).eps
    trace = np.trace(sample)
    target_norm = trace**2 / p  # squared Frobenius norm of trace/p * I, and also tr(S @ that target)
    top = trace**2 * target_norm / n
    bottom = np.sum(sample**2) * target_norm - target_norm**2
    alpha = 1 - (top + eps) / (bottom + eps)
    beta = (1 - alpha) * (target_norm + eps) / (target_norm + eps)
    return alpha * sample + beta * (trace / p) * np.eye(p)


def live_dimensions(X: np.ndarray) -> np.ndarray:
    """Boolean mask of the dimensions an eraser fitted on the rows ``X`` may edit: those not constant on
    them and with a variance above ``VARIANCE_TOL`` times the largest."""
    X = np.asarray(X, dtype=np.float64)
    if not len(X):
        return np.zeros(X.shape[1], dtype=bool)
    variance = X.var(axis=0)
    varies = ~(X[0] == X).all(axis=0)  # exact: a computed variance of constant values may be ~1e-34
    return varies & (variance > VARIANCE_TOL * variance.max())


def _embedded(eraser: Eraser, live: np.ndarray, mean: np.ndarray) -> Eraser:
    """``eraser``, fitted on the ``live`` dimensions, as an eraser of all of them that leaves the others
    exactly as they are (zero rows of ``left``) and does not read them (zero columns of ``right``)."""
    left = np.zeros((len(live), eraser.rank))
    right = np.zeros((eraser.rank, len(live)))
    left[live], right[:, live] = eraser.left, eraser.right
    return Eraser(eraser.method, mean, left, right, eraser.iterations, eraser.history)


def fit_leace(X: np.ndarray, y: np.ndarray, n_classes: int, svd_tol: float = SVD_TOL, shrinkage: bool = True) -> Eraser:
    """The LEACE eraser of the label ``y`` from ``X`` (rows used for fitting only). After it, the
    fitting rows' cross-covariance with the one-hot label is zero, with or without ``shrinkage``; the
    dimensions constant on these rows are left as they are."""
    X = np.asarray(X, dtype=np.float64)
    live = live_dimensions(X)
    return _embedded(_leace(X[:, live], y, n_classes, svd_tol, shrinkage), live, X.mean(axis=0))


def _leace(X: np.ndarray, y: np.ndarray, n_classes: int, svd_tol: float, shrinkage: bool) -> Eraser:
    n, d = X.shape
    if not d:
        return Eraser("leace", np.zeros(0), np.zeros((0, 0)), np.zeros((0, 0)))
    mean = X.mean(axis=0)
    centred = X - mean
    z = one_hot(y, n_classes)
    sigma = shrunk_covariance(centred) if shrinkage else centred.T @ centred / (n - 1)
    sigma_xz = centred.T @ (z - z.mean(axis=0)) / (n - 1)
    eigenvalues, vectors = np.linalg.eigh((sigma + sigma.T) / 2)
    keep = eigenvalues > eigenvalues[-1] * d * np.finfo(np.float64).eps  # the threshold of a pseudo-inverse
    eigenvalues = np.clip(eigenvalues, 0.0, None)
    safe = np.where(keep, eigenvalues, 1.0)
    whiten = (vectors * np.where(keep, 1 / np.sqrt(safe), 0.0)) @ vectors.T
    unwhiten = (vectors * np.where(keep, np.sqrt(safe), 0.0)) @ vectors.T
    u, s, _ = np.linalg.svd(whiten @ sigma_xz, full_matrices=False)
    u = u[:, s > svd_tol]
    return Eraser("leace", mean, unwhiten @ u, u.T @ whiten)


def _directions(model) -> np.ndarray:
    """Orthonormal ``(d, r)`` basis of the directions a fitted softmax probe reads (rank <= classes - 1)."""
    coef = np.asarray(model.coef_, dtype=np.float64)
    coef = coef - coef.mean(axis=0)  # adding one vector to every class's weights changes no prediction
    u, s, _ = np.linalg.svd(coef.T, full_matrices=False)
    return u[:, s > 1e-10 * max(s.max(), 1e-300)]


def fit_inlp(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    iterations: int = 50,
    seed: int = 0,
    C: float = INLP_C,
    groups: np.ndarray | None = None,
) -> Eraser:
    """INLP: up to ``iterations`` rounds of probe + nullspace projection, judged on a held-out 20% (with
    ``groups``, the group of every row, about a fifth of the groups, whole); the dimensions constant on these
    rows are left as they are."""
    X = np.asarray(X, dtype=np.float64)
    live, mean = live_dimensions(X), X.mean(axis=0)
    scale = float((X - mean).std()) or 1.0  # one global factor (of all dimensions): directions stay directions
    return _embedded(_inlp(X[:, live], y, n_classes, iterations, seed, C, scale, groups), live, mean)


def _inlp(
    X: np.ndarray, y: np.ndarray, n_classes: int, iterations: int, seed: int, C: float, scale: float, groups
) -> Eraser:
    if not X.shape[1]:
        return Eraser("inlp", np.zeros(0), np.zeros((0, 0)), np.zeros((0, 0)), iterations=0)
    mean = X.mean(axis=0)
    centred = X - mean
    fit_rows, val_rows = ev.inner_split(y, np.arange(len(y)), seed, groups)
    if len(np.unique(y[fit_rows])) < 2:
        raise InputError(
            f"too few labelled rows per class for INLP: its probes are fitted on {len(fit_rows)} of the "
            f"{len(y)} training rows, and these hold one class only",
            f"label more rows of each class (at least 5), or use {spoken_value(None, 'method', 'leace', '--method')}",
        )
    majority = np.bincount(y[val_rows], minlength=n_classes).max() / len(val_rows)
    basis = np.zeros((X.shape[1], 0))
    history: list[float] = []
    for _ in range(int(iterations)):
        projected = ((centred - (centred @ basis) @ basis.T) / scale).astype(np.float32)
        model = clf.fit_quietly(clf.make_linear("logreg", C, False, seed), projected[fit_rows], y[fit_rows])
        history.append(float(np.mean(model.predict(projected[val_rows]) == y[val_rows])))
        if history[-1] <= majority + INLP_MARGIN:
            break
        new = _directions(model)
        new = new - basis @ (basis.T @ new)  # numerically, keep the basis orthonormal
        q, r = np.linalg.qr(new)
        q = q[:, np.abs(np.diag(r)) > 1e-8]
        if not q.shape[1]:
            break
        basis = np.concatenate([basis, q], axis=1)
    return Eraser("inlp", mean, basis, basis.T.copy(), iterations=len(history), history=history)


def random_eraser(X: np.ndarray, rank: int, seed: int = 0) -> Eraser:
    """The control of amnesic probing: an orthogonal projection removing ``rank`` random directions
    (seeded), centred on the mean of ``X``."""
    d = np.asarray(X).shape[1]
    basis = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, rank)))[0] if rank else np.zeros((d, 0))
    return Eraser("random", np.asarray(X, dtype=np.float64).mean(axis=0), basis, basis.T.copy())


def fit_eraser(
    method: str,
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    iterations: int = 50,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> Eraser:
    """The eraser of ``method`` fitted on these rows; one that changes nothing if they hold one class. ``groups``
    (the group of every row, ``--group``): INLP's holdout takes whole groups (LEACE holds nothing out)."""
    if len(np.unique(y)) < 2:
        d = np.asarray(X).shape[1]
        return Eraser(
            method,
            np.asarray(X, dtype=np.float64).mean(axis=0),
            np.zeros((d, 0)),
            np.zeros((0, d)),
            iterations=0 if method == "inlp" else None,
        )
    if method == "leace":
        return fit_leace(X, y, n_classes)
    if method == "inlp":
        return fit_inlp(X, y, n_classes, iterations, seed, groups=groups)
    raise ValueError(f"unknown erasure method {method!r}")


def moved(X: np.ndarray, erased: np.ndarray) -> float:
    """Mean squared change per row relative to the features' total variance (0: untouched)."""
    X = np.asarray(X, dtype=np.float64)
    change = np.mean(np.sum((np.asarray(erased, dtype=np.float64) - X) ** 2, axis=1))
    variance = np.sum(X.var(axis=0))
    return float(change / variance) if variance > 0 else 0.0
