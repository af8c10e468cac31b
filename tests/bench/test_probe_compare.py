"""bench/probe_compare.py: two results tables of the same command pass when every choice is the same and every
score within the tolerance, and fail on a moved score or a changed C or best row."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import probe_compare  # noqa: E402


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "features": ["main"] * 3,
            "kind": ["majority", "single", "single"],
            "layer_spec": ["majority", "0", "1"],
            "layer": [None, 0, 1],
            "pooling": ["", "mean", "mean"],
            "classifier": ["majority", "logreg", "logreg"],
            "accuracy": [0.25, 0.80, 0.85],
            "control_accuracy": [None, 0.26, 0.24],
            "C": [None, 0.01, 0.1],
            "fit_seconds": [0.0, 3.0, 4.0],
            "per_class_f1": ['{"a": 0.0}', '{"a": 0.7}', '{"a": 0.8}'],
            "p_vs_best": [None, 0.01, None],
            "is_best": [False, False, True],
        }
    )


def _compare(tmp_path, change=None, tolerance=0.002) -> bool:
    old, new = _table(), _table()
    new["fit_seconds"] = [1.0, 9.0, 9.0]  # timings are ignored
    if change:
        change(new)
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    return probe_compare.compare(tmp_path / "old.csv", tmp_path / "new.csv", tolerance)


def test_scores_within_the_tolerance_and_the_same_choices_pass(tmp_path, capsys):
    def nudge(table):
        table.loc[1, "accuracy"] += 0.0015
        table.loc[2, "p_vs_best"] = 0.5  # information only

    assert _compare(tmp_path, nudge)
    assert "choices identical: True" in capsys.readouterr().out


def test_a_moved_score_a_changed_c_or_best_row_fails(tmp_path):
    for column, value in (("control_accuracy", 0.2), ("C", 1.0), ("is_best", False), ("per_class_f1", '{"a": 0.9}')):

        def change(table, column=column, value=value):
            table.loc[2, column] = value

        assert not _compare(tmp_path, change), column
