"""The baseline beside each learning-curve point (sentence and word curves alike): the majority class, or for a
number the training mean, fitted on the point's subsampled training rows and scored on its test rows: the probe
table's reference row (``evaluation.baseline_guess``, the one definition of both)."""

from __future__ import annotations

import numpy as np

from ..evaluation import Scoring, baseline_guess


def curve_baseline(plan, y: np.ndarray, n_classes: int | None = None) -> float:
    """The baseline column of a learning-curve point: the majority class's accuracy (``n_classes`` classes) or, for a
    number (``n_classes`` None), the training mean's R², each fitted on ``plan``'s (subsampled) training parts and
    scored on its test parts as the point's probe is (the mean over the outer folds, NaN folds left out, as the
    point's own score)."""
    scoring = Scoring("r2") if n_classes is None else Scoring("accuracy", n_classes)
    predicted = [baseline_guess(y, train, test, n_classes) for train, test in plan.folds]
    values = [scoring.value(y[test], guess) for (_, test), guess in zip(plan.folds, predicted, strict=True)]
    finite = [value for value in values if np.isfinite(value)]
    return float(np.mean(finite)) if finite else float("nan")
