"""Per-word predictions of a word-level run (``<stem>.<label>.predictions.csv``, read by ``featx explain``)
and the confusion of its best layer."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .classification_table import chosen_row
from .word_items import WordPlan, WordTask

MAX_CONFUSIONS = 15


def prediction_table(
    table: pd.DataFrame,
    predictions: dict,
    task: WordTask,
    plan: WordPlan,
    ids: list[str],
    forms: list[str],
    offsets: np.ndarray,
) -> tuple[pd.DataFrame | None, str]:
    """One row per tested item (word or word pair), one column of predicted labels per layer, for the
    pooling/classifier of the best single-layer probe."""
    singles = table[(table.kind == "single") & (table.features == "main") & table.index.isin(list(predictions))]
    if singles.empty:
        return None, ""
    best = chosen_row(singles, "accuracy")  # the row chosen on training rows
    chosen = singles[(singles.pooling == best.pooling) & (singles.classifier == best.classifier)]
    tested = np.sort(np.concatenate([test for _, test in plan.folds]))
    names = np.asarray(task.class_names, dtype=object)
    sentence = task.groups[tested]
    start = offsets[sentence]
    words = task.words[tested]
    if words.ndim == 1:
        item_id = [f"{ids[s]}:{w - b + 1}" for s, w, b in zip(sentence, words, start, strict=False)]
        shown = [forms[w] for w in words]
    else:
        item_id = [f"{ids[s]}:{h - b + 1}->{d - b + 1}" for s, (h, d), b in zip(sentence, words, start, strict=False)]
        shown = [f"{forms[h]} -> {forms[d]}" for h, d in words]
    frame = pd.DataFrame(
        {
            "row": sentence,
            "id": item_id,
            "word": shown,
            "label": names[task.y[tested]],
            "n_tokens": offsets[sentence + 1] - start,
            "truncated": False,
        }
    )
    for index, record in chosen.iterrows():
        frame[f"layer_{record.layer_spec}"] = names[np.maximum(predictions[index][tested], 0)]
    return frame, f"{best.pooling}/{best.classifier}"


def top_confusions(true: pd.Series, predicted: pd.Series, limit: int = MAX_CONFUSIONS) -> pd.DataFrame:
    """The most frequent (label, predicted) pairs that differ, with their share of the label's items."""
    wrong = true != predicted
    counts = pd.crosstab(true[wrong], predicted[wrong]).stack()
    counts = counts[counts > 0].sort_values(ascending=False, kind="stable").head(limit)
    totals = true.value_counts()
    return pd.DataFrame(
        {
            "label": [a for a, _ in counts.index],
            "predicted": [b for _, b in counts.index],
            "count": counts.to_numpy(),
            "share_of_label": [n / totals[a] for (a, _), n in counts.items()],
        }
    )
