"""The best layer of featx neurons and featx probe --sweep printouts: the row chosen on the training part when
the results hold ``selection_score``, else the best on the test rows, and each printout says which."""

from __future__ import annotations

import pandas as pd

from featx.probing.analyses.sweep import SweepResult
from featx.report.text.format import best_index, chosen_how
from featx.report.text.neurons import best_layer
from featx.report.text.sweep import format_sweep


def _rows(selection_score=None) -> pd.DataFrame:
    """Two layers: layer 1 scores higher on the test rows, layer 0 on the training part's held-out rows."""
    frame = pd.DataFrame({"layer": [0, 1], "accuracy": [0.70, 0.80]})
    if selection_score is not None:
        frame["selection_score"] = selection_score
    return frame


def test_best_index_prefers_the_selection_score_and_says_so():
    assert best_index(_rows()) == 1 and chosen_how(_rows()) == "best on the test rows"
    chosen = _rows([0.9, 0.6])
    assert best_index(chosen) == 0 and chosen_how(chosen) == "chosen on the training part"
    assert best_index(_rows([float("nan")] * 2)) == 1  # no held-out score: the old rule


def test_neurons_best_layer_follows_the_selection_score():
    selection = pd.concat([_rows(), _rows()], ignore_index=True).assign(selection=["all", "all", "top", "top"])
    selection.loc[2:, "accuracy"] = [0.99, 0.1]  # a top-k share's row never picks the layer
    assert best_layer(selection) == 1
    assert best_layer(selection.assign(selection_score=[0.9, 0.6, 0.99, 0.99])) == 0


def _sweep(selection_score=None) -> SweepResult:
    records = []
    for setting, params, shift in (("C=1", 10, 0.0), ("rank=1", 5, -0.05)):
        for layer, accuracy in ((0, 0.70), (1, 0.80)):
            records.append(
                {
                    "label": "y",
                    "pooling": "mean",
                    "layer": layer,
                    "task": "real",
                    "family": "logreg" if setting == "C=1" else "rank",
                    "setting": setting,
                    "params": params,
                    "accuracy": accuracy + shift,
                    "accuracy_low": accuracy + shift - 0.05,
                    "accuracy_high": accuracy + shift + 0.05,
                }
            )
    table = pd.DataFrame.from_records(records)
    if selection_score is not None:
        table["selection_score"] = selection_score * 2
    meta = {"label": "y", "features_file": "x.h5", "model": "m", "evaluation": "split"}
    return SweepResult(table, meta)


def test_sweep_printout_names_how_its_best_layers_were_picked():
    text = format_sweep(_sweep())
    assert "the best probe (best on the test rows)" in text and "the best layer of each probe (best on" in text
    assert "layers best across complexities: layer 1 for 2 of 2 probes" in text
    chosen = format_sweep(_sweep([0.9, 0.6]))
    assert "the best probe (chosen on the training part)" in chosen
    assert "layers best across complexities: layer 0 for 2 of 2 probes" in chosen
