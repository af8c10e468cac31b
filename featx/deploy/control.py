"""The control task beside ``featx fit``'s chosen probe, as ``featx probe`` reports it beside each of its scores.

``featx probe``'s control labels (``probing.permuted_control``: a sentence label or a number permuted over the rows
with its seeded draw; ``probing.type_control``: each word type, an arc's dependent's, one random class drawn from
the training classes) are learnt by the chosen layer and pooling's head, fitted by the very code that fits the
saved head, on the same rows (a logreg's C holdout drawn on the real labels, as probe's joint solve draws it):
with a test split, on the training rows (the val rows choosing its C or alpha where
they choose the saved head's) and scored on the test rows; without one, over the folds the candidates were scored
on, each fitted on its fold's training part and scored on its held-out part. Only the chosen candidate gets one (one
head's fit, or one per fold), not every candidate as in ``featx probe``. A head selector has none: its baselines are
the head offset and the nearest word (``attach``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..probing import fold_mean
from .arc_plan import SELECTOR
from .choose import cross_validate, fit_any, score_of, take
from .cv_baselines import word_keys

CONTROL_NAMES = {  # what the control labels are, by the label's level
    "sentence": "labels permuted over the rows",
    "regression": "targets permuted over the rows",
    "word": "a random class per word type",
    "arc": "a random relation per dependent's word type",
}


def control_targets(plan) -> np.ndarray | None:
    """``featx probe``'s control labels of ``plan.rows`` (codes, or numbers); None for a head selector."""
    from ..probing import permuted_control, type_control

    seed = int(plan.config.seed)
    if plan.arcs == SELECTOR:
        return None
    if plan.level in ("word", "arc"):
        assert plan.classes is not None
        return type_control(word_keys(plan, plan.rows), plan.y, plan.train, len(plan.classes), seed)
    return permuted_control(plan.y, seed)


def control_name(probe) -> str:
    """What the control labels of ``probe``'s label are."""
    return CONTROL_NAMES["regression" if probe.classes is None else probe.level]


def held_out_control(plan, X: Any, options: dict, dev: np.ndarray | None, groups: np.ndarray | None) -> float | None:
    """The control task's test score: the chosen head fitted on the training rows' control labels (``dev`` and
    ``groups`` as the saved head's), scored on the test rows' control labels; None for a head selector."""
    y_control = control_targets(plan)
    if y_control is None:
        return None
    classifier = options["classifier"]
    y_train, strata = y_control[plan.train], _strata(plan, plan.train)
    head = fit_any(classifier, take(X, plan.train), y_train, plan.classes, options, dev, groups, strata)
    k = None if plan.classes is None else len(plan.classes)
    return _finite(score_of(plan.metric, y_control[plan.test], head.predict_codes(take(X, plan.test)), k))


def cv_control(plan, X: Any, folds: list, options: dict, groups: np.ndarray | None) -> float | None:
    """The control task's cross-validated score over ``folds`` (positions in ``plan.train``), each fold's head
    fitted on its training part, as the candidates were scored (``choose.cross_validate``); None for a head
    selector, or where no fold defines the metric."""
    y_control = control_targets(plan)
    if y_control is None:
        return None

    real = _strata(plan, plan.train)

    def fit_head(X_part, y_part, groups_part, rows):
        strata = None if real is None else real[rows]
        return fit_any(options["classifier"], X_part, y_part, plan.classes, options, groups=groups_part, strata=strata)

    X_train, y_train = take(X, plan.train), y_control[plan.train]
    scores = np.asarray(cross_validate(X_train, y_train, plan.classes, folds, plan.metric, fit_head, groups))
    finite = scores[np.isfinite(scores)]
    return _finite(fold_mean(finite)) if len(finite) else None


def control_text(score: float | None, real: float, probe, where: str = "") -> str:
    """``control task (labels permuted over the rows): 0.5012 on the same rows; selectivity +0.2655``: the control
    score (of the rows or folds ``where`` says) beside the probe's own ``real`` score there, and their difference,
    as ``featx probe`` prints them (``control``, ``select.``)."""
    if score is None:
        return f"control task ({control_name(probe)}): undefined{where}"
    selectivity = f"; selectivity {real - score:+.4f}" if np.isfinite(real) else ""
    return f"control task ({control_name(probe)}): {score:.4f}{where}{selectivity}"


def _strata(plan, rows: np.ndarray) -> np.ndarray | None:
    """The real labels of ``rows``, which a logreg control head's C holdout is drawn on, as ``featx probe`` solves
    the control task with the real labels and one holdout drawn on theirs; None for numbers."""
    return None if plan.classes is None else np.asarray(plan.y)[rows]


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


__all__ = ["CONTROL_NAMES", "control_name", "control_targets", "control_text", "cv_control", "held_out_control"]
