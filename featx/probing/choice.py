"""The printout's lines on a run's choice of its best row (``ProbeMeta``'s ``metric``, ``selected``,
``best_on_test`` and ``optimism``): which row the training part chose, which scored best on the test rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CHOSEN_ON_TRAINING = "chosen on the training part"
BEST_ON_TEST = "best on the test rows"


def chosen_layer(meta: Mapping[str, Any], layers: Sequence[str], scores: Mapping[str, float]) -> tuple[str, str]:
    """The layer an analysis of a run's per-layer predictions looks at, and how it was picked: the run's row
    chosen on the training part (``selected``, with its ``selection_score``) when it is one of ``layers`` and of
    the predictions' pooling and probe (``predictions_for``), else the layer with the best test score in
    ``scores`` (results written before the choice on the training part, or another pooling's choice)."""
    selected = meta.get("selected")
    if isinstance(selected, Mapping) and selected.get("selection_score") is not None:
        layer = str(selected.get("layer_spec", selected.get("layer")))
        pooling, classifier = (str(meta.get("predictions_for") or "").split("/") + ["", ""])[:2]
        same_probe = selected.get("pooling") in (None, pooling) and selected.get("classifier") in (None, classifier)
        if layer in layers and same_probe:
            return layer, CHOSEN_ON_TRAINING
    finite = {layer: float(scores[layer]) for layer in layers if scores[layer] == scores[layer]}
    return (max(finite, key=finite.__getitem__) if finite else str(layers[-1])), BEST_ON_TEST


def selection_lines(meta: Mapping[str, Any]) -> list[str]:
    """The printout's lines on the choice: the row chosen on the training part (its selection score, and
    its test score), the row with the best test score, and the optimism of choosing on the test rows."""
    metric, selected, best = meta.get("metric"), meta.get("selected"), meta.get("best_on_test")
    if not metric or not selected:
        return []

    def where(row: Mapping[str, Any]) -> str:
        site = "" if row.get("site") in ("hidden", "", None) else f", site {row['site']}"
        features = "" if row.get("features") == "main" else f", {row['features']} features"
        return f"layer {row['layer_spec']}, {row['pooling']}, {row['classifier']}{site}{features}"

    def score(row: Mapping[str, Any]) -> str:
        low, high = row.get("test_low"), row.get("test_high")
        interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        return "n/a" if row.get("test_score") is None else f"{row['test_score']:.3f}{interval}"

    lines = [
        f"chosen on the training part (selection_score: {metric} on each training part's held-out rows, "
        f"never the test rows): {where(selected)}, selection score {selected['selection_score']:.3f}; "
        f"its test {metric} {score(selected)}"
    ]
    if best:
        same = all(
            best.get(key) == selected.get(key) for key in ("features", "site", "layer_spec", "pooling", "classifier")
        )
        optimism = meta.get("optimism")
        lines.append(
            "best on the test rows (is_best_on_test, for comparison only): "
            + ("the same row" if same else f"{where(best)}, test {metric} {score(best)}")
            + (f"; optimism of choosing on the test rows {optimism:+.3f}" if optimism is not None else "")
        )
    return lines
