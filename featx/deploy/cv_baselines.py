"""The baselines beside ``featx fit``'s cross-validated score when the features file has no test split.

Without test rows the chosen candidate's cross-validated score is the estimate, so it gets the baselines a test
score gets, cross-validated over the very folds the candidates were scored on (``selection_folds``, which
``choose`` and ``choose_heads`` are given): in each fold the baseline is fitted on the fold's training part only
and scored on its held-out part, a group or a sentence whole on one side as the folds keep it, and the fold scores
are averaged as the candidates' are. The majority class (a number: the training mean) and the lexical baseline
(a sentence label: TF-IDF n-grams, ``featx.probing``'s own, its C or alpha chosen inside the fold; a word label
or a relation labeller: the most frequent class of each (dependent's) word type); a head selector: each word's
most frequent head offset and the nearest word on the side most heads lie on (``attach``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..probing import fold_mean
from ..store import FeatureFile
from .arc_plan import SELECTOR
from .attach import attached_in, neighbour_baseline, offset_baseline
from .choose import cv_folds, fit_options, score_of

Folds = list[tuple[np.ndarray, np.ndarray]]
# What the lexical baseline is, by the label's level: words alone, as featx probe computes them.
LEXICAL_NAMES = {
    "sentence": "TF-IDF n-grams",
    "word": "most frequent class of each word type",
    "arc": "most frequent relation of each dependent's word type",
}


def choice_groups(plan) -> Any:
    """What the choice's folds keep whole: a word's (an arc's) sentence, ``--group``'s ``Groups``, or None."""
    if plan.grouping is None:
        return None
    return plan.grouping.codes[plan.train] if plan.level != "sentence" else plan.grouping.take(plan.train)


def selection_folds(plan) -> Folds:
    """The folds every candidate is cross-validated on: ``(fit, held-out)`` positions in ``plan.train``."""
    options = fit_options(plan)
    n_classes = None if plan.classes is None else len(plan.classes)
    return cv_folds(plan.y[plan.train], n_classes, options["folds"], options["seed"], choice_groups(plan))


def lexical_options(plan, groups: np.ndarray | None) -> dict:
    """The TF-IDF baseline's options (``featx.probing.lexical_predictions``'): the fit's grids, weighting and seed,
    ``groups`` each row's group, which its C (alpha) holdout keeps whole."""
    config = plan.config
    return {
        "classes": plan.classes is not None,
        "cs": tuple(config.cs),
        "alphas": tuple(config.alphas),
        "balanced": bool(config.balanced),
        "seed": int(config.seed),
        "groups": groups,
    }


def word_keys(plan, rows: np.ndarray) -> np.ndarray:
    """The word type of each of ``rows`` (a word, or an arc's dependent), as featx probe keys its lexical baseline."""
    from ..probing import word_types

    with FeatureFile(plan.path) as features:
        return word_types(features)[rows if plan.level == "word" else rows[:, 1]].astype(str)


def cv_baselines(plan, folds: Folds) -> dict:
    """The baselines' cross-validated scores over ``folds`` (``selection_folds``), by the fit's metric: ``folds``
    (how many), ``baseline`` (majority class or training mean) and ``lexical`` (absent where the file stores no
    texts: a note says so); a head selector's ``offset`` and ``<side>_neighbour`` UAS (``neighbour`` where the folds'
    training words lie on different sides). A score no fold defines (a constant's correlation) is None."""
    if plan.arcs == SELECTOR:
        return _head_baselines(plan, folds)
    y = plan.y[plan.train]
    k = None if plan.classes is None else len(plan.classes)

    def scored(predictions) -> float | None:
        scores = np.array([score_of(plan.metric, y[val], p, k) for (_, val), p in zip(folds, predictions, strict=True)])
        finite = scores[np.isfinite(scores)]
        return fold_mean(finite) if len(finite) else None

    constant = [np.full(len(val), _constant(y[fit], k)) for fit, val in folds]
    record: dict[str, Any] = {"folds": len(folds), "baseline": scored(constant)}
    lexical = _lexical_folds(plan, folds)
    if lexical is not None:
        record["lexical"] = scored(lexical)
    return record


def _constant(y_fit: np.ndarray, k: int | None) -> float | int:
    """The fold's majority class (a number: its mean), from the fold's training part only."""
    return float(np.mean(y_fit)) if k is None else int(np.argmax(np.bincount(y_fit, minlength=k)))


def _lexical_folds(plan, folds: Folds) -> list[np.ndarray] | None:
    """The lexical baseline's predictions of each fold's held-out part, fitted on its training part only."""
    from ..probing import lexical_fold_predictions, per_type_predictions

    rows, y = plan.rows[plan.train], plan.y[plan.train]
    if plan.level in ("word", "arc"):
        assert plan.classes is not None
        keys = word_keys(plan, rows)
        return [per_type_predictions(keys, y, fit, val, len(plan.classes)) for fit, val in folds]
    groups = None if plan.grouping is None else plan.grouping.codes[plan.train]
    with FeatureFile(plan.path) as features:
        return lexical_fold_predictions(features, rows, y, folds, lexical_options(plan, groups), plan.notes)


def _head_baselines(plan, folds: Folds) -> dict:
    """A head selector's baselines, each fold's fitted on the words of its training sentences and scored (UAS)
    on every word with a known head of its held-out sentences, as ``choose_heads`` scores a candidate."""
    with FeatureFile(plan.path) as features:
        offsets, heads = np.asarray(features.word_offsets(), np.int64), features.word_heads()
    sentence_of = np.searchsorted(offsets, plan.rows[plan.train][:, 1], side="right") - 1
    offset, neighbour, sides = [], [], set()
    for fit, val in folds:
        train = attached_in(offsets, heads, np.unique(sentence_of[fit]))
        test = attached_in(offsets, heads, np.unique(sentence_of[val]))
        offset.append(float(np.mean(offset_baseline(train, test, offsets) == test[1])))
        nearest, side = neighbour_baseline(train, test, offsets)
        neighbour.append(float(np.mean(nearest == test[1])))
        sides.add(side)
    name = f"{sides.pop()}_neighbour" if len(sides) == 1 else "neighbour"
    return {"folds": len(folds), "offset": _finite(fold_mean(offset)), name: _finite(fold_mean(neighbour))}


def _finite(value: float) -> float | None:
    """A score as the manifest records it: None where undefined."""
    return float(value) if np.isfinite(value) else None


def cv_baseline_text(probe, cv: dict, metric: str) -> str:
    """What featx fit prints after its cross-validated score without a test split: the baselines of ``cv``."""

    def shown(value: float | None) -> str:
        return f"{value:.4f}" if value is not None else f"n/a (a constant has no {metric})"

    if probe.arcs == SELECTOR:
        name = next(key for key in cv if key.endswith("neighbour"))
        side = name.split("_")[0] if name != "neighbour" else "each fold's side"
        side = f"to the {side}" if name != "neighbour" else f"on {side}"
        parts = [f"most frequent head offset {shown(cv['offset'])}", f"nearest word {side} {shown(cv[name])}"]
    else:
        parts = [f"{'training mean' if probe.classes is None else 'majority class'} {shown(cv['baseline'])}"]
        if "lexical" in cv:
            parts.append(f"{LEXICAL_NAMES[probe.level]} {shown(cv['lexical'])}")
    return "; ".join(parts) + f" (the same {cv['folds']} folds, each fitted on its fold's training part)"


__all__ = [
    "LEXICAL_NAMES",
    "choice_groups",
    "cv_baseline_text",
    "cv_baselines",
    "lexical_options",
    "selection_folds",
    "word_keys",
]
