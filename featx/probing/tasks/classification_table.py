"""The label side and the per-row side of a sentence-level classification run: the label column probed
(stored, or joined from ``--labels``; binned and rare classes dropped as asked) and the per-row
out-of-fold predictions file of one pooling and classifier."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import InputError
from ...io import LabelColumn
from ...options import spoken_value
from ...store import FeatureFile
from ..config import ProbeConfig
from ..inputs import TOKENS_POOLING
from ..label_classes import Bins, bins_hint, prepare
from ..labels import column_in_split, joined_label, stored_column


def label_column(
    features: FeatureFile, config: ProbeConfig, notes: list[str], label: str | None
) -> tuple[LabelColumn, Bins | None, int]:
    """The label column to probe (``label``: the stored column chosen by the plan): stored, or joined from
    ``--labels``; without the rows of a split value featx does not use (``labels.in_split``); binned (the edges
    from the split's train and val rows, ``labels.bin_rows``) / rare classes dropped as asked; with its ``--bins``
    edges (None without) and the number of rows without a label (the other rows left out, each said in a note:
    a split value, a dropped class)."""
    split = features.split
    if config.labels is None:
        assert label is not None, "a stored label column is chosen by the plan"
        given = stored_column(features, label)
        column = column_in_split(given, split, notes, features.path)
        return *prepare(column, config.bins, config.min_class_rows, notes, split=split), unlabelled(given)
    given = joined_label(features, config.labels, config.join, config.label, notes)
    column = column_in_split(given, split, notes, features.path)
    number_hint = (
        f"{bins_hint()}, or store it (featx labels add {features.path} {config.labels}) and probe it with "
        f"{spoken_value(config, 'label', column.name)}, a regression probe"
    )
    return *prepare(column, config.bins, config.min_class_rows, notes, number_hint, split), unlabelled(given)


def unlabelled(column: LabelColumn) -> int:
    """The rows of ``column`` without a label (ProbeMeta.n_unlabelled)."""
    return int((np.asarray(column.codes) < 0).sum())


def check_predictions_choice(choice: str | None, poolings: list[str], classifiers: list[str]) -> None:
    """Fail before the (long) run when --predictions names a pooling or classifier that is not probed."""
    if not choice:
        return
    pooling, _, classifier = str(choice).partition("/")
    known = poolings + ([TOKENS_POOLING] if "attn" in classifiers else [])
    if pooling not in known or (classifier and classifier not in classifiers):
        raise InputError(
            f"{spoken_value(None, 'predictions', choice, '--predictions')}: that pooling/classifier is not probed in "
            "this run",
            f"choose a pooling of {', '.join(known)} and a classifier of {', '.join(classifiers)}",
        )


def chosen_rows(singles: pd.DataFrame, choice: str | None) -> tuple[pd.DataFrame, str, str]:
    """The single-layer rows of the predictions file: those of ``--predictions POOLING[/CLASSIFIER]``, else
    of the pooling and classifier of the row chosen on training rows; with that pooling and classifier."""
    if not choice:
        best = chosen_row(singles, "accuracy")
        pooling, classifier = best.pooling, best.classifier
        return singles[(singles.pooling == pooling) & (singles.classifier == classifier)], pooling, classifier
    pooling, _, classifier = str(choice).partition("/")
    chosen = singles[singles.pooling == pooling]
    if classifier:
        chosen = chosen[chosen.classifier == classifier]
    if chosen.empty:
        raise InputError(
            f"{spoken_value(None, 'predictions', choice, '--predictions')}: no single-layer results for that "
            "pooling/classifier",
            f"choose from {', '.join(sorted(set(singles.pooling + '/' + singles.classifier)))}",
        )
    classifier = chosen.classifier.iloc[0]
    return chosen[chosen.classifier == classifier], pooling, classifier


def chosen_row(singles: pd.DataFrame, metric: str) -> pd.Series:
    """The row chosen on training rows (``is_best``, the best ``selection_score``) among ``singles``; by
    ``metric`` only when none has a selection score."""
    scored = singles[singles.is_best & singles.selection_score.notna()] if "selection_score" in singles else singles
    if scored.empty:
        return singles.loc[singles[metric].idxmax()]
    return scored.loc[scored.selection_score.idxmax()]


def prediction_table(
    table: pd.DataFrame,
    predictions: dict,
    choice: str | None,
    class_names: list[str],
    y: np.ndarray,
    row_info: pd.DataFrame,
) -> tuple[pd.DataFrame | None, str]:
    """Per-row out-of-fold predictions (class names) of every single layer for one pooling/classifier."""
    singles = table[(table.features == "main") & (table.kind == "single")]
    if "site" in singles:  # the per-row predictions are those of the hidden states
        singles = singles[singles.site == "hidden"]
    if singles.empty:
        return None, ""
    chosen, pooling, classifier = chosen_rows(singles, choice)
    names = np.asarray(class_names, dtype=object)
    frame = row_info.copy()
    frame.insert(2, "label", names[y])
    tested = np.zeros(len(y), bool)
    for index, record in chosen.iterrows():
        values = predictions[index]
        tested |= values >= 0
        frame[f"layer_{record.layer_spec}"] = np.where(values >= 0, names[np.maximum(values, 0)], "")
    return frame[tested].reset_index(drop=True), f"{pooling}/{classifier}"
