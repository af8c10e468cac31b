"""The per-class F1 panel: one line per class against the layer, the legend beside the panel (never over a
curve); with many classes only the lowest-F1 ones are coloured and named."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import InputError
from ..load import chosen_row, default_classifier, default_metric, layer_rows, load_results, poolings_of
from .style import CYCLE, MARKERS, RC, axes_or_new, legend_below

MAX_CLASS_LINES = 10  # more classes than this: the lowest-F1 ones in colour, the others thin grey


def _class_f1(scores: dict, name) -> float:
    """A class's F1 in one row, NaN when it has none (a class absent from the test part is stored as null)."""
    value = scores.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else np.nan


def _draw_class_lines(ax, per_layer: dict, layers: list[int], classes: list) -> None:
    """One line per class; with many classes only the lowest-F1 ones (at the last layer) get colour and a label."""
    highlighted = classes
    if len(classes) > MAX_CLASS_LINES:
        last = [_class_f1(per_layer[layers[-1]], name) for name in classes]
        order = sorted(range(len(classes)), key=lambda i: last[i] if np.isfinite(last[i]) else -1.0)
        highlighted = [classes[i] for i in order[:MAX_CLASS_LINES]]
        for name in classes:
            if name not in highlighted:
                ax.plot(
                    layers,
                    [_class_f1(per_layer[layer], name) for layer in layers],
                    color="#BBBBBB",
                    linewidth=0.8,
                    zorder=1,
                )
    for index, name in enumerate(highlighted):
        y = [_class_f1(per_layer[layer], name) for layer in layers]
        ax.plot(
            layers,
            y,
            color=CYCLE[index % len(CYCLE)],
            marker=MARKERS[index % len(MARKERS)],
            markersize=5,
            linewidth=2,
            label=str(name),
            zorder=3,
        )


def plot_per_class_f1(
    frame: pd.DataFrame,
    meta: dict | None = None,
    ax=None,
    pooling: str | None = None,
    classifier: str | None = None,
    title: bool | str = True,
):
    """F1 of each class against layer for one pooling (default: the pooling of the row the run chose on its training
    part, ``load.chosen_row``; in results without a selection score, the best pooling by accuracy)."""
    import matplotlib.pyplot as plt

    frame, meta = load_results(frame, meta)
    if "per_class_f1" not in frame.columns:
        raise InputError("these results have no per_class_f1 column", "re-run featx probe to get per-class F1")
    classifier = classifier or default_classifier(frame, meta)
    rows = layer_rows(frame, classifier)
    if pooling is None:
        pooling = str(chosen_row(rows, default_metric(frame, meta), meta)[0]["pooling"])
    part = rows[rows["pooling"] == pooling]
    if part.empty:
        raise InputError(
            f"no rows for pooling '{pooling}'", f"poolings in these results: {', '.join(poolings_of(rows))}"
        )
    per_layer = {int(row["layer"]): row["per_class_f1"] for _, row in part.iterrows()}
    classes = list(meta.get("label_names") or [])
    for scores in per_layer.values():
        classes += [name for name in scores if name not in classes]
    classes = [name for name in classes if any(name in scores for scores in per_layer.values())]
    if not classes:
        raise InputError("the per_class_f1 column is empty in these results")
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        layers = sorted(per_layer)
        _draw_class_lines(ax, per_layer, layers, classes)
        ax.set_xticks(layers)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel("F1 of the class")
        ax.grid(True, axis="y", alpha=0.3)
        if len(classes) <= MAX_CLASS_LINES:
            # beside the panel, never over a curve
            ax.legend(
                title=str(meta.get("label") or "class"), frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1)
            )
        else:
            legend_below(
                ax,
                ncol=4,
                title=f"{meta.get('label') or 'class'}: the {MAX_CLASS_LINES} lowest-F1 classes "
                f"of {len(classes)} (the rest in grey)",
            )
        if title:
            ax.set_title(title if isinstance(title, str) else f"per-class F1 by layer ({pooling} pooling)", loc="left")
    return ax
