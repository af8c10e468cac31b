"""A finished run's evaluation drawn again over its predictions file's rows (``X.predictions.csv``): the split's
test rows, or the k folds rebuilt from the run's seed, fold count and groups as the probe drew them. ``featx
compare`` tests two runs over these folds, ``featx explain`` pools each fold's reference predictions over them."""

from __future__ import annotations

import numpy as np
import pandas as pd


def run_groups(meta: dict, frame: pd.DataFrame):
    """The groups of a ``--group`` run's predictions rows (its file's ``group`` column), coded as the probe coded
    them, so that its folds are drawn again as they were (None: the run kept no groups)."""
    from ...io import label_column
    from ..evaluation.groups import Groups

    column = meta.get("group")
    if not column:
        return None
    values = label_column(str(column), list(frame["group"])) if "group" in frame else None
    if values is None or (values.codes < 0).any():
        raise ValueError(
            f"the run kept groups of '{column}' whole (--group), and its predictions file does not give every "
            "row's group to draw its folds again by (a file of an older featx: run featx probe again)"
        )
    return Groups(str(column), values.codes, values.names).take(np.arange(len(frame)))


def run_plan(meta: dict, y: np.ndarray, names: list[str] | None, sentences: np.ndarray | None = None, groups=None):
    """The run's evaluation over the predictions file's rows; a word-level run's items carry their
    ``sentences``, and a ``--group`` run's rows their ``groups`` (``run_groups``), so its folds and resamples
    keep each sentence or group whole, as the probe's did; ``names`` None: a regression run's (unstratified)."""
    from ..evaluation.plans import Plan, make_plan
    from .regression import make_plan as regression_plan
    from .word_items import WordPlan, sentence_folds

    if meta.get("evaluation") == "split":
        tested = [(np.arange(0), np.arange(len(y)))]
        if sentences is None:
            return Plan("split", tested, [None], None if groups is None else groups.codes)
        return WordPlan("split", tested, [None], groups=sentences)
    folds, seed = int(meta.get("folds") or 5), int(meta.get("seed") or 0)
    if sentences is not None:
        pairs = sentence_folds(y, sentences, folds, seed)
        return WordPlan(f"{folds}-fold cv", pairs, [None] * len(pairs), groups=sentences)
    if names is None:  # a regression run's folds (unstratified, as the probe drew them)
        return regression_plan(y, None, folds, seed, groups)
    return make_plan(y, None, folds, seed, names, str(meta.get("label") or "label"), groups)
