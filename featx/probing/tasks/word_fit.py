"""The logistic word probes of one outer fold at treebank scale: standardise once, choose C on a sample of
whole training sentences, refit once on the whole training part.

The C path (``evaluation.search``) fits every C of the grid; on hundreds of thousands of words it is most
of a probe's time, while the C it picks is settled long before. So beyond ``SEARCH_ITEMS`` items the path
fits on a seeded sample of whole training sentences (never split: a sentence's items are all in or all
out) and is scored on the held-out training sentences (or the dev part); the chosen C is then fitted once
on the whole training part, warm-started from the sample's solution at that C. Test items never reach
the solver, the scaler or the choice of C. At or under ``SEARCH_ITEMS`` nothing is sampled and the fit is
the one ``evaluation.fit_logreg`` makes.

The real labels and the control task's share every matrix here (one standardisation, one batched solve),
and beyond ``SEARCH_ITEMS`` every pass over it too (``softmax.solve(joint=True)``: one matrix product for
both label vectors, about 1.4x faster; the real probe's solution then agrees within the solver's tolerance
with the one it gets without the control task, not bit for bit). The path's first C starts from the
intercept-only model (``null_model``) rather than zeros, and every solve starts L-BFGS from the inverse of
the sample's second moments (``Preconditioner``): hidden states are strongly correlated, and on a
20,000-sentence treebank this halved a probe's fit (real and control task: 45.5 s to 21.9 s on average).
"""

from __future__ import annotations

import numpy as np

from .. import evaluation as ev
from ..evaluation.search import search_logreg_on
from ..solvers import classifiers as clf
from ..solvers.softmax_problem import Preconditioner, null_model

SEARCH_ITEMS = 40_000  # the C path fits on at most this many items (whole training sentences, sampled)


def sample_sentences(groups: np.ndarray, rows: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """``rows`` (ascending) of whole sentences drawn in a seeded random order while their items fit in
    ``cap`` (at least one sentence); all of ``rows`` when they fit already."""
    if len(rows) <= cap:
        return rows
    sentences, counts = np.unique(groups[rows], return_counts=True)
    order = np.random.default_rng(seed + 53).permutation(len(sentences))
    taken = max(1, int(np.searchsorted(np.cumsum(counts[order]), cap, side="right")))
    return rows[np.isin(groups[rows], sentences[order[:taken]])]


def rows_of(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``X[rows]``: a view when ``rows`` is one ascending run (a split's training part usually is)."""
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1 and np.all(np.diff(rows) == 1):
        return X[rows[0] : rows[-1] + 1]
    return X[rows]


def standardised(X: np.ndarray, rows: np.ndarray, scaler: ev.Scaler) -> np.ndarray:
    """The scaler's output on ``X[rows]`` as one new float32 array (no intermediate copy of the rows)."""
    out = np.subtract(rows_of(X, rows), scaler.mean, dtype=np.float32)
    out /= scaler.scale
    return out


def fit_logreg_words(X, labels, train, dev, groups, n_classes: int, cs, balanced: bool, seed: int) -> list:
    """Scaler, C and final fit of every label vector on ``train`` (the C holdout by sentence when there is
    no ``dev``). Returns ``[(model, scaler, C, validation)]`` per label vector, as ``evaluation.fit_logreg``
    does: ``validation`` the (rows, predictions) of the held-out training sentences (or the dev rows) at C."""
    from ..solvers import softmax

    if dev is not None and (len(cs) == 1 or len(train) <= SEARCH_ITEMS):
        return ev.fit_logreg(X, labels, train, dev, n_classes, cs, balanced, seed)
    scaler = ev.Scaler(rows_of(X, train))
    Xs = standardised(X, train, scaler)
    targets = [y[train] for y in labels]
    if dev is None:
        fit_rows, val_rows = ev.inner_split(targets[0], np.arange(len(train)), seed, groups[train])
        X_val, val_targets, held_out = Xs[val_rows], [y[val_rows] for y in targets], train[val_rows]
    else:
        fit_rows = np.arange(len(train))
        X_val, val_targets, held_out = standardised(X, dev, scaler), [y[dev] for y in labels], dev
    sampled = len(fit_rows) > SEARCH_ITEMS  # else the plain fit, bit for bit
    fit_rows = sample_sentences(groups[train], fit_rows, SEARCH_ITEMS, seed)
    fit_targets = [y[fit_rows] for y in targets]
    X_fit = rows_of(Xs, fit_rows)
    # At scale: the path's first (most regularised) C starts from the intercept-only model, not from zeros,
    # and the path and the refit share the passes over the matrix and one preconditioner.
    start = [null_model(y, n_classes, X.shape[1], balanced) for y in fit_targets] if sampled else None
    preconditioner = Preconditioner.from_rows(X_fit) if sampled else None
    found = search_logreg_on(
        X_fit,
        fit_targets,
        X_val,
        val_targets,
        n_classes,
        cs,
        balanced,
        start,
        joint=sampled,
        preconditioner=preconditioner,
    )
    del X_val
    chosen, init = [C for C, *_ in found], [theta for _, theta, *_ in found]
    # One fit on the whole training part at the chosen C, from the path's solution there.
    solution = softmax.solve(
        Xs, targets, n_classes, chosen, balanced, init, clf.LOGREG_TOL, joint=sampled, preconditioner=preconditioner
    )
    return [
        (
            clf.logreg_from(solution.theta[p], solution.offsets[p], chosen[p], balanced),
            scaler,
            chosen[p],
            (held_out, found[p][3]),
        )
        for p in range(len(labels))
    ]
