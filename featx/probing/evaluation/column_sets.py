"""Logistic probes on several sets of columns of one matrix, on the same outer fold: ``featx neurons`` retrains a
probe on the top, the bottom and random draws of k neurons, dozens of small fits per training part.

``run_logreg_sets`` solves the sets of one size together, on their standardised columns stacked (``softmax.solve``
with a matrix per problem): each set's C path, C chosen, final fit and test predictions are bit for bit those of
``run_linear_tasks("logreg", X[:, columns], [y], ...)``, without the Python overhead of one L-BFGS loop per set;
the inner holdout that chooses C is the caller's, drawn once per training part for all of its sets.
"""

from __future__ import annotations

import time

import numpy as np

from ..solvers import classifiers as clf
from .core import PRECONDITION_VALUES, fit_scaler, path_then_final, run_linear_tasks
from .plans import FoldResult
from .search import search_logreg_on


def run_logreg_sets(
    X: np.ndarray, sets, y, train, test, dev, n_classes: int, cs, balanced, seed, groups=None, holdout=None
) -> list[FoldResult]:
    """``run_linear_tasks("logreg", X[:, columns], [y], train, test, dev, n_classes, cs, balanced, seed, groups)[0]``
    for each ``columns`` of ``sets`` (column index arrays of one size). ``holdout``: without ``dev``, the training
    part's inner split as ``inner_split(y[train], arange(len(train)), seed, groups[train])`` draws it (positions in
    ``train``). Sets whose fits are preconditioned (``PRECONDITION_VALUES``) are fitted one by one, as before."""
    fit_rows = len(train) if dev is not None else len(holdout[0])
    if fit_rows * len(sets[0]) >= PRECONDITION_VALUES:
        return [
            run_linear_tasks("logreg", X[:, columns], [y], train, test, dev, n_classes, cs, balanced, seed, groups)[0]
            for columns in sets
        ]
    from ..solvers import softmax_problem

    started = time.perf_counter()
    blocks = [X[:, columns] for columns in sets]
    scalers = [fit_scaler(block, train) for block in blocks]
    rows = train if dev is None else np.concatenate([train, dev])
    Xs = np.stack([scaler(block[rows]) for scaler, block in zip(scalers, blocks, strict=True)])
    fitted = _fit(Xs, y, train, dev, n_classes, cs, balanced, holdout)
    seconds = (time.perf_counter() - started) / len(sets)
    results = []
    for (theta, offsets, C, validation), scaler, block in zip(fitted, scalers, blocks, strict=True):
        model = clf.logreg_from(theta, offsets, C, balanced)  # its predict, without scikit-learn's input checks
        scores = softmax_problem.class_scores(scaler(block[test]), model.theta_)
        results.append(FoldResult(model.classes_[np.argmax(scores, axis=1)], C, seconds, validation=validation))
    return results


def _fit(Xs: np.ndarray, y, train, dev, n_classes: int, cs, balanced, holdout) -> list[tuple]:
    """(theta, offsets, C, validation) of each stacked matrix of ``Xs`` (the rows of ``train``, then ``dev``'s), as
    ``core.fit_logreg`` finds them for one: the C path on the dev rows, else on the holdout, then the final fit."""
    P, labels = len(Xs), y[train]
    if dev is not None:
        n = len(train)
        found = search_logreg_on(Xs[:, :n], [labels] * P, Xs[:, n:], [y[dev]] * P, n_classes, cs, balanced)
        return [(theta, offsets, C, (dev, predicted)) for C, theta, offsets, predicted in found]
    fit_rows, val_rows = holdout
    found, chosen, solution = path_then_final(Xs, [labels] * P, fit_rows, val_rows, n_classes, cs, balanced)
    return [(solution.theta[p], solution.offsets[p], chosen[p], (train[val_rows], found[p][3])) for p in range(P)]
