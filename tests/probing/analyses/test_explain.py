"""featx explain: flips, rows wrong everywhere, per-class F1, length and truncation splits."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from featx.cli import main
from featx.errors import StoreError
from featx.probing import probe
from featx.probing.analyses.explain import explain, length_buckets


def write_case(folder):
    """Six rows, three layers: known flips and a row wrong everywhere."""
    frame = pd.DataFrame(
        {
            "row": range(6),
            "id": ["r0", "r1", "r2", "r3", "r4", "r5"],
            "label": ["a", "b", "a", "b", "a", "b"],
            "n_tokens": [4, 5, 9, 10, 30, 31],
            "truncated": [False, False, False, False, True, True],
            "layer_0": ["a", "a", "b", "a", "b", "a"],  # right: r0
            "layer_1": ["a", "b", "a", "a", "a", "a"],  # right: r0 r1 r2 r4
            "layer_2": ["a", "b", "a", "a", "b", "b"],  # right: r0 r1 r2 r5
        }
    )
    path = folder / "c.label.predictions.csv"
    frame.to_csv(path, index=False)
    (folder / "c.label.probe.json").write_text(
        json.dumps(
            {"meta": {"label": "label", "predictions_for": "mean/logreg", "predictions_file": path.name}, "results": []}
        )
    )
    return path


def test_flips_and_always_wrong_on_a_known_case(tmp_path):
    result = explain(write_case(tmp_path))
    flips = dict(zip(result.flips.id, result.flips.first_right_layer, strict=False))
    assert flips == {"r1": "1", "r2": "1", "r5": "2"}  # r4 is right at 1 but wrong again at 2: no flip
    assert list(result.always_wrong.id) == ["r3"]
    assert result.per_class_f1.loc["a", "0"] == pytest.approx(2 / 7)  # tp 1; 3 true a, 4 predicted a
    assert result.by_truncation.loc["yes", "1"] == pytest.approx(0.5) and result.by_truncation.loc["yes", "rows"] == 2
    assert result.by_length["rows"].sum() == 6
    assert result.correct.mean()["2"] == pytest.approx(4 / 6)
    text = result.format()
    assert "rows wrong at every layer (1)" in text and "r3" in text


def test_explain_reads_a_results_file_and_the_cli_prints(tmp_path):
    write_case(tmp_path)
    output = CliRunner().invoke(main, ["explain", str(tmp_path / "c.label.probe.json"), "--limit", "1"])
    assert output.exit_code == 0, output.output
    assert "more (--limit N shows more)" in output.output and "per-class F1 by layer" in output.output


def test_missing_predictions_is_a_clear_error(tmp_path):
    (tmp_path / "x.label.probe.csv").write_text("features,layer_spec,pooling,classifier,accuracy\n")
    with pytest.raises(StoreError, match="no per-row predictions"):
        explain(tmp_path / "x.label.probe.csv")
    output = CliRunner().invoke(main, ["explain", str(tmp_path / "x.label.probe.csv")])
    assert output.exit_code == 2 and "featx: error:" in output.output


def test_another_commands_results_are_named_as_such_not_an_old_probe(tmp_path):
    """featx erase's table (no predictions beside it either) is not a probe's: the hint names what explain reads,
    not "run featx probe again with this featx version"."""
    erased = tmp_path / "x.erased-label-leace.erase.csv"
    erased.write_text("label,method,pooling,layer,rank,before,after\nlabel,leace,mean,0,1,0.9,0.5\n")
    output = CliRunner().invoke(main, ["explain", str(erased)])
    assert output.exit_code == 2 and "is not a featx probe results file" in output.output
    assert "hint: give the .probe.csv or .probe.json of featx probe" in output.output
    assert "run featx probe again" not in output.output


def test_length_buckets_cover_every_row():
    buckets = length_buckets(pd.Series([3, 4, 5, 8, 12, 20, 40, 41]), 4)
    assert buckets.notna().all() and buckets.nunique() == 4


@pytest.mark.slow
@pytest.mark.parametrize("split", [False, True])
def test_probe_writes_out_of_fold_predictions_that_explain_reads(tiny_model, tmp_path, split):
    from support.planted import make_features, plant

    path = make_features(tmp_path, tiny_model, split=split)
    y = plant(path, {2: 3.0})
    result = probe(path, folds=4, jobs=1, control=False, n_bootstrap=100)
    frame = pd.read_csv(result.predictions_path, keep_default_na=False)
    assert list(frame.columns[-3:]) == ["layer_0", "layer_1", "layer_2"]
    assert len(frame) == (32 if split else 80)  # every tested row once: all rows in cv, the test rows in a split
    rows = result.table[result.table.kind == "single"].set_index("layer")
    assert (frame.layer_2 == frame.label).mean() == pytest.approx(rows.loc[2, "accuracy"])
    assert (frame.label == np.array(["neg", "pos"])[y[frame.row]]).all()
    explained = explain(result.csv_path)
    assert explained.correct["2"].mean() > 0.9 and len(explained.flips) > 0
    assert explained.flips.first_right_layer.isin(["1", "2"]).all()
    assert "text" in explained.flips


def test_predictions_choice_is_checked_before_probing(tiny_model, tmp_path):
    from support.planted import make_features

    from featx.errors import InputError

    path = make_features(tmp_path, tiny_model, n_rows=40)
    with pytest.raises(InputError, match="predictions='cls/logreg'"):
        probe(path, predictions="cls/logreg", write=False)
    result = probe(path, predictions="mean/logreg", layers="0,1", folds=2, jobs=1, control=False, write=False)
    assert (
        list(result.predictions.columns[-2:]) == ["layer_0", "layer_1"]
        and result.meta["predictions_for"] == "mean/logreg"
    )
    rows = result.table[(result.table.kind == "single") & (result.table.pooling == "mean")]
    assert result.meta["predictions_layer"] == rows.loc[rows.is_best, "layer_spec"].item()  # chosen on training rows


@pytest.mark.parametrize("evaluation", ["split", "2-fold cv"])
def test_accuracy_stands_beside_the_majority_baseline_on_the_same_rows(tmp_path, evaluation):
    """A split run: the results table's majority row (scored on these test rows); k-fold: each fold's training
    majority pooled over the out-of-fold rows. By hand: 6 of 8 rows are 'a', and every training part of two
    stratified folds holds 3 'a' and 1 'b', so the pooled majority is 6/8; the split's table row says 0.625."""
    labels = ["a"] * 6 + ["b"] * 2
    frame = pd.DataFrame(
        {"row": range(8), "id": [f"r{i}" for i in range(8)], "label": labels, "n_tokens": range(4, 12)}
        | {"truncated": [False] * 8, "layer_0": ["a"] * 8, "layer_1": ["b"] * 8}
    )
    path = tmp_path / "c.label.predictions.csv"
    frame.to_csv(path, index=False)
    meta = {"label": "label", "predictions_for": "mean/logreg", "predictions_file": path.name}
    meta |= {"evaluation": "split"} if evaluation == "split" else {"evaluation": evaluation, "folds": 2, "seed": 0}
    majority = {"features": "main", "layer_spec": "majority", "pooling": "", "classifier": "majority"}
    results = [majority | {"accuracy": 0.625}]
    (tmp_path / "c.label.probe.json").write_text(json.dumps({"meta": meta, "results": results}))
    text = explain(tmp_path / "c.label.probe.json", write=False).format()
    by_hand = 0.625 if evaluation == "split" else 6 / 8
    assert f"accuracy by layer: 0 0.750  1 0.250\nbaseline: majority class accuracy {by_hand:.3f} (" in text
    assert ("on these same test rows" if evaluation == "split" else "pooled over the out-of-fold rows") in text


@pytest.mark.parametrize("evaluation", ["split", "3-fold cv"])
def test_r2_stands_beside_the_training_mean_on_the_same_rows(tmp_path, evaluation):
    """A number: a split run prints the results table's ``train mean`` row; a k-fold run pools each fold's
    training mean over the out-of-fold rows, computed here by hand over the folds the run drew (never a fold's
    own test rows in its mean)."""
    from featx.probing import run_plan

    y = np.array([1.0, 2.0, 4.0, 3.0, 5.0, 0.5, 2.5, 4.5, 1.5])
    frame = pd.DataFrame(
        {"row": range(9), "id": [f"r{i}" for i in range(9)], "label": y, "n_tokens": range(4, 13)}
        | {"truncated": [False] * 9, "layer_0": y + 0.5, "layer_1": y[::-1]}
    )
    path = tmp_path / "s.score.predictions.csv"
    frame.to_csv(path, index=False)
    meta = {"label": "score", "task": "regression", "predictions_for": "mean/ridge", "predictions_file": path.name}
    meta |= {"evaluation": "split"} if evaluation == "split" else {"evaluation": evaluation, "folds": 3, "seed": 4}
    reference = {"features": "main", "layer_spec": "train mean", "pooling": "", "classifier": "train mean"}
    reference |= {"r2": -0.04, "accuracy": None}
    (tmp_path / "s.score.probe.json").write_text(json.dumps({"meta": meta, "results": [reference]}))
    text = explain(tmp_path / "s.score.probe.json", write=False).format()
    if evaluation == "split":
        assert "baseline: the training mean's R² -0.040 (the results table's train mean row" in text
        return
    predicted = np.empty_like(y)
    folds = run_plan(meta, y, None).folds
    for train, test in folds:
        assert not set(train) & set(test)
        predicted[test] = y[train].mean()
    assert sorted(np.concatenate([test for _, test in folds]).tolist()) == list(range(9))
    by_hand = 1 - ((y - predicted) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    assert f"baseline: the training mean's R² {by_hand:.3f} (each fold's training part fitted it, pooled" in text
