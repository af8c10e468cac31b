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


def _sweep_rows(task: str, layer: int, rows: list[tuple]) -> list[dict]:
    return [
        {
            "label": "y",
            "pooling": "mean",
            "layer": layer,
            "task": task,
            "family": "mlp" if setting.startswith("width") else "logreg",
            "setting": setting,
            "params": params,
            "accuracy": accuracy,
            "accuracy_low": accuracy - 0.05,
            "accuracy_high": accuracy + 0.05,
            "selection_score": selection,
        }
        for setting, params, accuracy, selection in rows
    ]


def test_sweep_picks_follow_the_selection_score_where_the_test_rows_would_pick_otherwise():
    """Constructed so that every pick differs: on the test rows the MLP is best at layer 0 (and alone within 0.01
    of itself), C=1 the reference, the control task's best 0.60; on the held-out training rows the best at layer 0
    is the MLP by selection score yet C=0.1 is within 0.01 of it with fewer parameters, C=0.1 is the reference,
    layer 1 is C=0.1's best layer, and the control probe chosen the same way scores 0.50."""
    from featx.report.text.sweep import reference_setting, simplest_within

    records = _sweep_rows("real", 0, [("C=0.1", 10, 0.70, 0.795), ("C=1", 10, 0.78, 0.60), ("width=4", 40, 0.90, 0.80)])
    records += _sweep_rows("real", 1, [("C=0.1", 10, 0.68, 0.81), ("C=1", 10, 0.80, 0.55), ("width=4", 40, 0.85, 0.70)])
    for layer in (0, 1):
        records += _sweep_rows("control", layer, [("C=0.1", 10, 0.60, 0.40), ("width=4", 40, 0.50, 0.55)])
    table = pd.DataFrame.from_records(records)
    real = table[table.task == "real"]
    layer0 = real[real.layer == 0]
    assert table.loc[best_index(layer0)].setting == "width=4" and simplest_within(layer0).setting == "C=0.1"
    test_only = real.drop(columns="selection_score")  # the old rule, on the test rows
    assert simplest_within(test_only[test_only.layer == 0]).setting == "width=4"
    assert reference_setting(real) == "C=0.1" and reference_setting(test_only) == "C=1"
    c01 = real[real.setting == "C=0.1"]
    assert table.loc[best_index(c01)].layer == 1 and test_only.loc[c01.accuracy.idxmax()].layer == 0
    meta = {"label": "y", "features_file": "x.h5", "model": "m", "evaluation": "5-fold cv"}
    text = format_sweep(SweepResult(table, meta))
    assert "the best probe (chosen on the training part)" in text and "selection score is within 0.01" in text
    assert "reference (logreg C=0.1, the C with the best mean selection score" in text
    layer_line = next(line for line in text.splitlines() if line.startswith("0 "))
    assert layer_line.split()[4:] == ["0.800", "mlp", "width=4", "logreg", "C=0.1", "(10)", "2", "0.500"]
