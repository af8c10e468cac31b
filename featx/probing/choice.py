"""The layer an analysis of a run looks at: the row chosen on the training part, else the best on the test rows
(the printout's lines on the choice are ``featx.report``'s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

CHOSEN_ON_TRAINING = "chosen on the training part"
BEST_ON_TEST = "best on the test rows"
LAYER_KINDS = ("single", "cat", "stack")  # the rows of probes; the others (majority, lexical) are references


def baseline_rivals(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a baseline's paired test looks among for the chosen row: the main features' hidden-state single
    layers (in a run of other sites only, ``--site ffn``, those sites'), or in a run of ``cat(...)`` or ``stack``
    specs only (whose chosen row is one of them), those."""
    rows = table[(table.features == "main") & table.kind.isin(LAYER_KINDS)]
    if "site" in rows and (rows.site == "hidden").any():
        rows = rows[rows.site == "hidden"]
    singles = rows[rows.kind == "single"]
    return singles if not singles.empty else rows


def chosen_layer(meta: Mapping[str, Any], layers: Sequence[str], scores: Mapping[str, float]) -> tuple[str, str]:
    """The layer an analysis of a run's per-layer predictions looks at, and how it was picked: the layer chosen on
    the training part among the predictions' own layers (``predictions_layer``; the run's choice, ``selected``,
    when it is that row); in a file written without it, ``selected`` when it is a hidden-state layer of the
    predictions' pooling and probe (``predictions_for``); else the layer with the best test score in ``scores``
    (results written before the choice on the training part, or another site's or pooling's choice)."""
    pooling, classifier = (str(meta.get("predictions_for") or "").split("/") + ["", ""])[:2]
    selected = meta.get("selected")
    run_choice = None
    if isinstance(selected, Mapping) and selected.get("selection_score") is not None:
        same_probe = selected.get("pooling") in (None, pooling) and selected.get("classifier") in (None, classifier)
        same_features = selected.get("site") in (None, "hidden") and selected.get("features") in (None, "main")
        if same_probe and same_features:
            run_choice = str(selected.get("layer_spec", selected.get("layer")))
    own = meta.get("predictions_layer")
    if isinstance(own, str) and own in layers:
        return (
            own,
            CHOSEN_ON_TRAINING if own == run_choice else f"{CHOSEN_ON_TRAINING} among {pooling}/{classifier}'s layers",
        )
    if own is None and run_choice in layers:
        return str(run_choice), CHOSEN_ON_TRAINING
    finite = {layer: float(scores[layer]) for layer in layers if scores[layer] == scores[layer]}
    return (max(finite, key=finite.__getitem__) if finite else str(layers[-1])), BEST_ON_TEST
