"""featx explain's confusion matrix of a class label: counts at the chosen layer, printed, written as a CSV beside
the predictions (through the library), the run's selection on the training part used when it recorded one."""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner

from featx.cli import main
from featx.io import read_csv
from featx.probing.analyses.explain import confusion_matrix, explain


def write_case(folder, meta_extra=None):
    """Six rows, three layers; layer 1 has the most right rows (4 of 6), layer 2 as many, layer 0 one."""
    frame = pd.DataFrame(
        {
            "row": range(6),
            "id": [f"r{i}" for i in range(6)],
            "label": ["a", "b", "a", "b", "a", "b"],
            "n_tokens": [4, 5, 9, 10, 30, 31],
            "truncated": [False] * 6,
            "layer_0": ["a", "a", "b", "a", "b", "a"],
            "layer_1": ["a", "b", "a", "a", "a", "a"],
            "layer_2": ["a", "b", "a", "a", "b", "b"],
        }
    )
    path = folder / "c.label.predictions.csv"
    frame.to_csv(path, index=False)
    meta = {"label": "label", "predictions_for": "mean/logreg", "predictions_file": path.name, **(meta_extra or {})}
    (folder / "c.label.probe.json").write_text(json.dumps({"meta": meta, "results": []}))
    return path


def test_confusion_counts_at_the_best_layer_printed_and_written(tmp_path):
    result = explain(write_case(tmp_path))
    assert result.confusion_layer == "1" and result.confusion_how == "best on the test rows"
    assert result.confusion.loc["a"].tolist() == [3, 0] and result.confusion.loc["b"].tolist() == [2, 1]
    assert result.confusion_path == tmp_path / "c.label.confusion.csv"
    written = read_csv(result.confusion_path)
    assert written.columns.tolist() == ["true", "a", "b"] and written["a"].tolist() == [3, 2]
    text = result.format()
    assert "confusion matrix at layer 1 (best on the test rows; rows: true class, columns: predicted)" in text
    assert f"wrote {result.confusion_path}" in text


def test_the_layer_selected_on_the_training_part_is_used_when_recorded(tmp_path):
    selected = {"layer": 2, "pooling": "mean", "classifier": "logreg", "selection_score": 0.5}
    result = explain(write_case(tmp_path, {"selected": selected}), write=False)
    assert result.confusion_layer == "2" and result.confusion_how == "chosen on the training part"
    assert result.confusion.loc["b"].tolist() == [1, 2] and result.confusion_path is None
    assert not (tmp_path / "c.label.confusion.csv").exists()
    other = explain(write_case(tmp_path, {"selected": {**selected, "pooling": "cls"}}), write=False)
    assert other.confusion_layer == "1"  # a selection of another pooling does not name these predictions' layer


def test_the_predictions_own_layer_chosen_on_the_training_part_is_used_when_the_run_chose_elsewhere(tmp_path):
    """The run's choice is another site's layer (or a cat, or another pooling): the layer chosen on the training
    part among these predictions' own layers (``predictions_layer``, written by featx probe) is shown; a file
    written without it falls back to the best on the test rows, so labelled, never to another site's layer."""
    selected = {"site": "ffn", "layer_spec": "2", "layer": 2, "pooling": "mean", "classifier": "logreg"}
    selected |= {"features": "main", "selection_score": 0.9}
    old = explain(write_case(tmp_path, {"selected": selected}), write=False)
    assert old.confusion_layer == "1" and old.confusion_how == "best on the test rows"
    new = explain(write_case(tmp_path, {"selected": selected, "predictions_layer": "0"}), write=False)
    assert new.confusion_layer == "0" and new.confusion_how == "chosen on the training part among mean/logreg's layers"
    assert "confusion matrix at layer 0 (chosen on the training part among mean/logreg's layers;" in new.format()
    same = {**selected, "site": "hidden", "layer_spec": "0", "layer": 0}
    both = explain(write_case(tmp_path, {"selected": same, "predictions_layer": "0"}), write=False)
    assert both.confusion_how == "chosen on the training part"  # the run's own choice: said as before
    unknown = explain(write_case(tmp_path, {"predictions_layer": "7"}), write=False)
    assert unknown.confusion_layer == "1" and unknown.confusion_how == "best on the test rows"


def test_every_predicted_class_is_a_column_even_one_never_true():
    table = confusion_matrix(pd.Series(["a", "a", "b"]), pd.Series(["a", "c", "b"]), ["a", "b"])
    assert table.index.tolist() == ["a", "b", "c"] and table.columns.tolist() == ["a", "b", "c"]
    assert table.loc["a", "c"] == 1 and table.to_numpy().sum() == 3


def test_cli_explain_writes_the_csv(tmp_path):
    write_case(tmp_path)
    out = CliRunner().invoke(main, ["explain", str(tmp_path / "c.label.probe.json")])
    assert out.exit_code == 0, out.output
    assert "confusion matrix at layer 1" in out.output and (tmp_path / "c.label.confusion.csv").exists()


def test_a_folder_that_refuses_the_csv_costs_a_note(tmp_path, monkeypatch):
    import featx.io.csv_files as module

    def refuse(path, text):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(module, "atomic_write_text", refuse)
    result = explain(write_case(tmp_path))
    assert result.confusion_path is None and any("cannot write" in note for note in result.notes)


def write_regression_case(folder, meta_extra=None):
    """Four rows, two layers: layer 0 fits the test rows better than layer 1."""
    frame = pd.DataFrame(
        {
            "row": range(4),
            "id": [f"r{i}" for i in range(4)],
            "label": [1.0, 2.0, 3.0, 4.0],
            "n_tokens": [4, 5, 9, 10],
            "truncated": [False] * 4,
            "layer_0": [1.1, 2.0, 2.9, 4.0],
            "layer_1": [2.0, 2.0, 3.0, 2.0],
        }
    )
    path = folder / "r.score.predictions.csv"
    frame.to_csv(path, index=False)
    meta = {"label": "score", "task": "regression", "predictions_for": "mean/ridge", "predictions_file": path.name}
    (folder / "r.score.probe.json").write_text(json.dumps({"meta": {**meta, **(meta_extra or {})}, "results": []}))
    return path


def test_regression_residuals_follow_the_choice_on_the_training_part(tmp_path):
    fallback = explain(write_regression_case(tmp_path), texts=False)
    assert fallback.best == "0" and "largest residuals (prediction - label) at layer 0 (best on the test rows)" in (
        fallback.format()
    )
    selected = {"layer": 1, "layer_spec": "1", "pooling": "mean", "classifier": "ridge", "selection_score": 0.4}
    chosen = explain(write_regression_case(tmp_path, {"selected": selected}), texts=False)
    assert chosen.best == "1" and "at layer 1 (chosen on the training part)" in chosen.format()
    assert chosen.largest.iloc[0]["id"] in ("r0", "r3")  # the largest residuals of layer 1, not of layer 0


def test_the_predictions_of_a_run_written_with_o_find_their_results(tmp_path):
    """``featx probe -o run`` writes run.csv, run.json and run.predictions.csv: explain given the predictions file
    reads run.json (its label, baseline row and choice), as it reads <stem>.probe.json; a run.json of
    something else is left alone."""
    write_case(tmp_path, {"predictions_layer": "2"})
    (tmp_path / "c.label.probe.json").rename(tmp_path / "run.json")
    path = (tmp_path / "c.label.predictions.csv").rename(tmp_path / "run.predictions.csv")
    meta = json.loads((tmp_path / "run.json").read_text())
    meta["meta"]["predictions_file"] = path.name
    (tmp_path / "run.json").write_text(json.dumps(meta))
    found = explain(path, write=False)
    assert found.label == "label" and found.confusion_layer == "2" and found.confusion_how.startswith("chosen on")
    (tmp_path / "run.json").write_text(json.dumps({"something": "else"}))
    other = explain(path, write=False)
    assert other.label == "" and other.confusion_how == "best on the test rows"
