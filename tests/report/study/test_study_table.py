"""The study report's data side: the table made uniform, the row shown per metric x pooling x model x task, the
layer curves and the expected layer, and the bad inputs (one clear InputError each)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from support.study_tables import HOSTILE, study_rows

from featx.errors import InputError
from featx.report.study import table
from featx.report.study.page import render_study_report


def test_the_shown_row_is_the_chosen_one_else_the_best_selection_score(study_table):
    picks = table.view(study_table).picks.set_index(["metric", "pooling", "model_key", "task"])
    assert len(picks) == 3 * 2 * 2
    chosen = picks.loc[("accuracy", "mean", "minilm", "sst2 · label")]
    assert (chosen["layer"], chosen["how"]) == (3, "chosen on the training part")
    by_selection = picks.loc[("accuracy", "cls", HOSTILE, "gum · upos")]
    assert (by_selection["layer"], by_selection["how"]) == (1, "best selection score")
    rows = study_table[(study_table.metric == "accuracy") & (study_table.pooling == "cls")]
    expected = rows[(rows.model == HOSTILE) & (rows.corpus == "gum") & (rows.layer == 1)].score.item()
    assert by_selection["score"] == expected


def test_without_selection_scores_the_best_test_score_and_lower_is_better_for_errors(study_table):
    frame = study_table.drop(columns=["selection_score", "chosen"])
    frame.loc[frame.metric == "macro_f1", "metric"] = "mae"
    picks = table.view(frame).picks.set_index(["metric", "pooling", "model_key", "task"])
    assert picks.loc[("accuracy", "mean", "minilm", "sst2 · label")][["layer", "how"]].tolist() == [
        2,
        "best on the test rows",
    ]
    assert picks.loc[("mae", "mean", "minilm", "sst2 · label")]["layer"] in (0, 4)  # the smallest error: an end


def test_nan_or_missing_optional_columns_still_make_a_view():
    frame = study_rows(models=("a",), tasks=(("c", "l"),))
    frame = frame[(frame.metric == "accuracy") & (frame.pooling == "mean")][
        ["model", "corpus", "label", "layer", "score"]
    ]
    shown = table.view(frame.assign(score=frame.score.where(frame.layer != 4)))
    assert shown.metrics == ["score"] and shown.poolings == ["(none)"] and len(shown.picks) == 1
    assert shown.frame["depth"].tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1])  # layer / the deepest layer scored
    sparse = study_rows(models=("a", "b"), tasks=(("c", "l"),))
    for column in ("metric", "pooling", "ci_low", "n_layers", "relative_depth", "chosen", "seed", "classifier"):
        sparse[column] = np.nan
    page = render_study_report(sparse)
    assert page.count("study-fig-") >= 8


def test_several_seeds_of_one_model_are_told_apart():
    frame = pd.concat([study_rows(models=("rand",)).assign(seed=seed) for seed in (0, 1)])
    assert table.view(frame).models == ["rand · seed 0", "rand · seed 1"]


@pytest.mark.parametrize(
    ("layers", "scores", "metric", "expected"),
    [
        ([0, 1, 2], [0.5, 0.7, 0.9], "accuracy", 1.5),  # (1 * 0.2 + 2 * 0.2) / 0.4
        ([2, 0, 1], [0.9, 0.5, 0.7], "accuracy", 1.5),  # any order
        ([0, 1, 2, 3], [0.5, 0.9, 0.6, 0.7], "accuracy", 1.0),  # cumulative: only layer 1 gains
        ([0, 1, 2], [0.5, 0.3, 0.4], "mae", 1.0),  # an error: a fall is the gain
        ([0, 1, 2], [0.6, 0.6, 0.5], "accuracy", math.nan),  # never above the first layer
        ([3], [0.6], "accuracy", math.nan),
        ([0, 1, 2], [0.5, np.nan, 0.9], "accuracy", 2.0),  # a missing score is no layer
    ],
)
def test_expected_layer(layers, scores, metric, expected):
    found = table.expected_layer(layers, scores, metric)
    assert (math.isnan(found) and math.isnan(expected)) or found == pytest.approx(expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda t: render_study_report([1, 2]),
            "the study report needs the study's results table as a pandas DataFrame, not list",
        ),
        (
            lambda t: render_study_report(t.drop(columns=["score", "layer"])),
            "the study table has no layer, score columns",
        ),
        (lambda t: render_study_report(t.assign(score=np.nan)), "the study table has no row with a score"),
        (lambda t: render_study_report(t, summary={"a": 1}), "the study summary must be a pandas DataFrame, not dict"),
        (
            lambda t: render_study_report(t, links=["x"]),
            "the study report's links must be a mapping cell -> report path, not list",
        ),
    ],
)
def test_bad_inputs_are_one_clear_error(study_table, call, message):
    with pytest.raises(InputError) as raised:
        call(study_table)
    assert raised.value.message == message and raised.value.hint
    if "no row with a score" in message:  # one phrase, which featx.study.load's hint shares
        assert raised.value.hint == table.run_study_first() == "run the study first: featx study run STUDY.toml"
