"""The inner search over C of the linear probes: fit along the C grid on part of a training part and
stop once the validation score stops improving (``search_c``; ``search_logreg`` for several label
vectors solved together). The features come in standardised; the caller holds out the validation rows.

What a path scores each C by (``CPath``): a logistic probe, its validation log-loss (``validation_log_loss``,
lower is better); an SVM, which gives no probabilities, its validation accuracy. Accuracy on a holdout of
a few dozen rows moves in steps of a row and ties across Cs, so that the C it picked hung on which rows were
held out (TREC, MiniLM, 150 training rows: one layer's test accuracy 0.733 or 0.450 as the classes were
spelt); the log-loss of the same rows is continuous in C and close to unimodal in log C.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...errors import InputError
from ..solvers import classifiers as clf
from ..solvers.softmax_problem import balanced_weights

PATH_PATIENCE = 2  # stop the C path after this many larger Cs without a better validation score
PATH_TOL = 1e-3  # looser solver tolerance along the path; the final fit uses the probe's own


def search_c(name: str, Xs: np.ndarray, y: np.ndarray, fit_rows, val_rows, cs, balanced, seed):
    """Fit along the C grid (smallest C first) on ``fit_rows``; score on ``val_rows``. Used for the
    linear probes other than logreg (``search_logreg``); a warm-startable one reuses the previous fit.

    The path is scored by accuracy (``CPath``; a ``logreg`` one by log-loss), close to unimodal in log C,
    so it stops after ``PATH_PATIENCE`` Cs without improvement: the weakly regularised fits it skips are the
    slowest ones. Returns (best C, the model fitted at it, its predictions of ``val_rows``). Ties go to the
    smaller C (the simpler probe).
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
    by_loss = name == "logreg"
    path = log_loss_path() if by_loss else CPath(y[val_rows])
    for C in sorted(cs):
        model.set_params(C=C)
        clf.fit_quietly(model, Xs[fit_rows], y[fit_rows])
        predicted = model.predict(Xs[val_rows])
        score = (
            -model_log_loss(model, Xs[val_rows], y[val_rows], balanced)
            if by_loss
            else float(np.mean(predicted == y[val_rows]))
        )
        if not path.record(C, score, partial(_snapshot, model, predicted)):
            break
    chosen, predicted = path.best_state
    chosen.set_params(tol=final_tol)
    return path.best_c, chosen, predicted


class CPath:
    """The stopping rule of one C path: best validation score so far (higher is better), and patience.

    ``y_val``: the validation labels of a path scored by accuracy (an SVM's): strongly regularised probes
    predict the majority class, and on imbalanced data that plateau can span several Cs, so patience only
    starts counting once the path beats the majority class. None: a path scored by minus the validation
    log-loss (``log_loss_path``), which has no plateau (it moves with every C), so patience counts from the
    first C. ``gain``: how much higher than the best a score must be to be a new best (MDL's paths, scored by
    minus a sum of bits: 1e-9).
    """

    def __init__(self, y_val: np.ndarray | None = None, gain: float = 1e-12):
        self.majority = -np.inf if y_val is None else np.bincount(y_val).max() / max(1, len(y_val))
        self.gain, self.best_score, self.waited = gain, -np.inf, 0
        self.best_c: float | None = None
        self.best_state: Any = None  # what ``state()`` gave at the best C (a fitted model, or weights)

    def record(self, C: float, score: float, state) -> bool:
        """Log the fit at ``C``; False once the path should stop. ``state()`` is called for a new best."""
        if score > self.best_score + self.gain:
            self.best_score, self.best_c, self.best_state, self.waited = score, C, state(), 0
        elif self.majority == -np.inf or self.best_score > self.majority + 1e-12:
            self.waited += 1
        return self.waited < PATH_PATIENCE


def log_loss_path() -> CPath:
    """The C path of a logistic probe: scored by ``-validation_log_loss`` (``record``'s higher is better)."""
    return CPath(None)


def validation_log_loss(scores: np.ndarray, y_val: np.ndarray, balanced: bool) -> float:
    """The mean negative log-likelihood of each validation row's true class under a logistic probe's class
    ``scores`` (``(rows, classes)``, log-softmaxed here): what a logistic probe's C is chosen by. ``balanced``:
    each class present among the rows weighs the same in the mean, as ``--balanced`` weighs them in the fit.
    A row whose class the probe never saw while fitting (score ``-inf``, or a code below 0) is left out:
    its loss is infinite at every C alike."""
    scores = np.asarray(scores, dtype=np.float64)
    y_val = np.asarray(y_val)
    top = scores.max(axis=1, keepdims=True)
    log_total = np.log(np.exp(scores - top).sum(axis=1)) + top[:, 0]
    true = np.full(len(y_val), -np.inf)
    coded = y_val >= 0
    true[coded] = scores[np.flatnonzero(coded), y_val[coded]]
    seen = np.isfinite(true)
    if not seen.any():
        return 0.0
    losses = log_total[seen] - true[seen]
    if not balanced:
        return float(losses.mean())
    return float(losses @ balanced_weights(y_val[seen], scores.shape[1]))


def model_log_loss(model, X: np.ndarray, y: np.ndarray, balanced: bool) -> float:
    """``validation_log_loss`` of a fitted logistic classifier (``classes_``, ``decision_function``) on the rows
    ``X`` labelled ``y`` (labels it never saw while fitting left out)."""
    scores = np.asarray(model.decision_function(X), dtype=np.float64)
    if scores.ndim == 1:  # scikit-learn's binary scores: the second class's log-odds
        scores = np.column_stack([np.zeros_like(scores), scores])
    classes = np.asarray(model.classes_)
    at = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
    return validation_log_loss(scores, np.where(classes[at] == y, at, -1), balanced)


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

    One C path per label vector (each with its own stopping rule, scored by its validation log-loss); at every
    C the vectors still on their path are fitted in one batched solve (``softmax.solve``), warm-started from
    their last C.
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

    paths = [log_loss_path() for _ in val_labels]
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
            scores = solution.scores(X_val if X_val.ndim == 2 else X_val[t], j)
            predicted = np.argmax(scores, axis=1)
            score = -validation_log_loss(scores, val_labels[t], balanced)
            if paths[t].record(C, score, partial(_solution_at, solution, j, predicted)):
                still.append(t)
        live = still
    return [(path.best_c, *path.best_state) for path in paths]


def _solution_at(solution, j: int, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A copy of label vector ``j``'s weights and offsets in a batched solve (a path's new best), with
    its validation predictions."""
    return solution.theta[j].copy(), solution.offsets[j].copy(), predicted
