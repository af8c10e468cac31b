"""The inner search over C of the linear probes: fit along the C grid on part of a training part and
stop once the validation score stops improving (``search_c``; ``search_logreg`` for several label
vectors solved together). The features come in standardised; the caller holds out the validation rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...errors import InputError
from ..solvers import classifiers as clf

PATH_PATIENCE = 2  # stop the C path after this many larger Cs without a better validation score
PATH_TOL = 1e-3  # looser solver tolerance along the path; the final fit uses the probe's own


def search_c(name: str, Xs: np.ndarray, y: np.ndarray, fit_rows, val_rows, cs, balanced, seed):
    """Fit along the C grid (smallest C first) on ``fit_rows``; score on ``val_rows``. Used for the
    linear probes other than logreg (``search_logreg``); a warm-startable one reuses the previous fit.

    Validation accuracy is close to unimodal in log C, so the path stops after ``PATH_PATIENCE``
    Cs without improvement: the weakly regularised fits it skips are the slowest ones.
    Returns (best C, the model fitted at it, its predictions of ``val_rows``). Ties go to the smaller C
    (the simpler probe).
    """
    if len(np.unique(y[fit_rows])) < 2:
        raise InputError(
            f"too few labelled rows per class for the {name} probe's search over C: the part of a training "
            f"fold it fits on ({len(fit_rows)} row(s)) holds one class only",
            "label more rows of each class (at least 5), or use --classifier logreg",
        )
    model = clf.make_linear(name, cs[0], balanced, seed)
    final_tol = model.get_params()["tol"]
    model.set_params(tol=max(final_tol, PATH_TOL))
    path = CPath(y[val_rows])
    for C in sorted(cs):
        model.set_params(C=C)
        clf.fit_quietly(model, Xs[fit_rows], y[fit_rows])
        predicted = model.predict(Xs[val_rows])
        if not path.record(C, float(np.mean(predicted == y[val_rows])), partial(_snapshot, model, predicted)):
            break
    chosen, predicted = path.best_state
    chosen.set_params(tol=final_tol)
    return path.best_c, chosen, predicted


class CPath:
    """The stopping rule of one C path: best validation score so far, and patience.

    Strongly regularised probes predict the majority class; on imbalanced data that plateau can span
    several Cs, so patience only starts counting once the path beats the majority class.
    """

    def __init__(self, y_val: np.ndarray):
        self.majority = np.bincount(y_val).max() / max(1, len(y_val))
        self.best_score, self.waited = -1.0, 0
        self.best_c: float | None = None
        self.best_state: Any = None  # what ``state()`` gave at the best C (a fitted model, or weights)

    def record(self, C: float, score: float, state) -> bool:
        """Log the fit at ``C``; False once the path should stop. ``state()`` is called for a new best."""
        if score > self.best_score + 1e-12:
            self.best_score, self.best_c, self.best_state, self.waited = score, C, state(), 0
        elif self.best_score > self.majority + 1e-12:
            self.waited += 1
        return self.waited < PATH_PATIENCE


def _snapshot(model, predicted: np.ndarray):
    """A copy of the fitted ``model`` (the path refits the original), with its validation predictions."""
    from sklearn.base import clone

    copy = clone(model)
    for attr in ("coef_", "intercept_", "classes_", "n_features_in_", "n_iter_"):
        if hasattr(model, attr):
            setattr(copy, attr, np.array(getattr(model, attr), copy=True))
    return copy, predicted


def search_logreg(
    Xs: np.ndarray,
    labels: list[np.ndarray],
    fit_rows,
    val_rows,
    n_classes: int,
    cs,
    balanced,
    joint: bool = False,
    preconditioner=None,
):
    """``search_c`` for logreg and several label vectors over the same rows, solved together.

    One C path per label vector (each with its own stopping rule); at every C the vectors still on
    their path are fitted in one batched solve (``softmax.solve``), warm-started from their last C.
    Returns (best C, theta at it, offsets, predictions of ``val_rows`` at it) per label vector.
    ``joint`` and ``preconditioner``: ``softmax.solve``'s.
    """
    fit = [y[fit_rows] for y in labels]
    val = [y[val_rows] for y in labels]
    return search_logreg_on(
        Xs[fit_rows], fit, Xs[val_rows], val, n_classes, cs, balanced, joint=joint, preconditioner=preconditioner
    )


def search_logreg_on(
    X_fit: np.ndarray,
    fit_labels: list,
    X_val: np.ndarray,
    val_labels: list,
    n_classes,
    cs,
    balanced,
    start=None,
    joint: bool = False,
    preconditioner=None,
):
    """``search_logreg`` on a fit matrix and a validation matrix given apart (standardised, the rows of a
    training part only): what ``search_logreg`` returns, for callers that hold out or sample their own rows.
    ``start``: the first C's starting weights per label vector (None: zeros); ``joint`` and ``preconditioner``:
    ``softmax.solve``'s. Stacked ``(P, n, d)`` matrices give each label vector its own (``softmax.solve``)."""
    from ..solvers import softmax

    paths = [CPath(y) for y in val_labels]
    current: list = list(start) if start is not None else [None] * len(fit_labels)
    live = list(range(len(fit_labels)))
    for C in sorted(cs):
        if not live:
            break
        solution = softmax.solve(
            X_fit if X_fit.ndim == 2 or len(live) == len(X_fit) else X_fit[live],
            [fit_labels[t] for t in live],
            n_classes,
            [C] * len(live),
            balanced,
            init=[current[t] for t in live],
            tol=PATH_TOL,
            joint=joint,
            preconditioner=preconditioner,
        )
        still = []
        for j, t in enumerate(live):
            current[t] = solution.theta[j]
            predicted = np.argmax(solution.scores(X_val if X_val.ndim == 2 else X_val[t], j), axis=1)
            score = float(np.mean(predicted == val_labels[t]))
            if paths[t].record(C, score, partial(_solution_at, solution, j, predicted)):
                still.append(t)
        live = still
    return [(path.best_c, *path.best_state) for path in paths]


def _solution_at(solution, j: int, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A copy of label vector ``j``'s weights and offsets in a batched solve (a path's new best), with
    its validation predictions."""
    return solution.theta[j].copy(), solution.offsets[j].copy(), predicted
