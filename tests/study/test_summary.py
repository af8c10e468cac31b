"""The summary's figures against hand computation: the expected layer, the tied layers of a flat and of a
peaked curve, and the gaps to the baselines and to the random-weights models."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from featx.study import RESULT_COLUMNS, SUMMARY_COLUMNS, expected_layer, summarise


def test_expected_layer_weights_each_layer_by_its_gain():
    # gains 0.1 (layer 1), 0.2 (layer 2), 0 (layer 3): (1 * 0.1 + 2 * 0.2) / 0.3
    assert expected_layer([0, 1, 2, 3], [0.5, 0.6, 0.8, 0.8]) == pytest.approx(0.5 / 0.3)
    # on the cumulative curve (0.5, 0.7, 0.7, 0.9): a loss is no gain, and a layer's gain is over the best
    # below it: gains 0.2, 0, 0.2 -> (1 * 0.2 + 3 * 0.2) / 0.4
    assert expected_layer([0, 1, 2, 3], [0.5, 0.7, 0.6, 0.9]) == pytest.approx(2.0)
    assert expected_layer([3, 0, 2, 1], [0.8, 0.5, 0.8, 0.6]) == pytest.approx(0.5 / 0.3)  # any order
    assert math.isnan(expected_layer([0, 1, 2], [0.7, 0.7, 0.7]))  # flat: no gain, no expected layer
    assert math.isnan(expected_layer([0, 1, 2], [0.9, 0.8, 0.7]))


def rows(model, scores, significant, chosen, random_init=False, seed=None, lexical=0.6, control=0.5):
    n = len(scores)
    return pd.DataFrame({
        "model": model, "corpus": "c", "label": "y", "group": None, "random_init": random_init, "seed": seed,
        "task": "classification", "metric": "accuracy", "site": "hidden", "layer": range(n), "n_layers": n - 1,
        "relative_depth": [layer / (n - 1) for layer in range(n)], "pooling": "mean", "classifier": "logreg",
        "score": scores, "ci_low": [s - 0.1 for s in scores], "ci_high": [s + 0.1 for s in scores],
        "selection_score": scores, "chosen": [layer == chosen for layer in range(n)], "p_vs_best": 0.5,
        "significant_vs_best": significant, "majority": 0.5, "lexical": lexical, "control": control,
        "selectivity": [s - control for s in scores], "n_train": 30, "n_test": 10, "results": f"{model}/c/y.csv",
    })[list(RESULT_COLUMNS)]  # fmt: skip


def test_summary_of_a_peaked_curve_a_flat_one_and_two_random_models():
    table = pd.concat([
        rows("peaked", [0.5, 0.6, 0.9, 0.8, 0.85], [True, True, False, True, False], chosen=2),
        rows("flat", [0.7, 0.71, 0.7], [False, False, False], chosen=1),
        rows("r0", [0.5, 0.6, 0.55], [True, False, False], chosen=1, random_init=True, seed=0),
        rows("r1", [0.5, 0.7, 0.65], [True, False, False], chosen=1, random_init=True, seed=1),
    ], ignore_index=True)  # fmt: skip
    summary = summarise(table).set_index("model")
    assert list(summary.reset_index().columns) == list(SUMMARY_COLUMNS)
    peaked, flat = summary.loc["peaked"], summary.loc["flat"]
    assert (peaked["layer"], peaked["relative_depth"], peaked["tied_layers"], peaked["flat"]) == (2, 0.5, "2,4", False)
    assert (flat["layer"], flat["tied_layers"], flat["flat"]) == (1, "0-2", True)
    assert peaked["over_lexical"] == pytest.approx(0.3) and peaked["over_control"] == pytest.approx(0.4)
    # cumulative curve 0.5, 0.6, 0.9, 0.9, 0.9: gains 0.1 (1), 0.3 (2), 0 (3: a loss), 0 (4: below layer 2's
    # 0.9): (0.1 + 0.6) / 0.4
    assert peaked["expected_layer"] == pytest.approx(0.7 / 0.4)
    assert peaked["expected_depth"] == pytest.approx(1.75 / 4)
    assert peaked["control_models"] == 2 and peaked["control_mean"] == pytest.approx(0.65)
    assert peaked["control_sd"] == pytest.approx(0.1 / math.sqrt(2))
    assert peaked["over_control_models"] == pytest.approx(0.25)
    assert flat["over_control_models"] == pytest.approx(0.71 - 0.65)
    assert math.isnan(summary.loc["r0", "over_control_models"])


def test_layers_significantly_above_the_chosen_one_are_named_not_counted_below_it():
    """The choice is made on the training part, the paired tests on the test rows: a layer the choice missed
    that scores significantly above the chosen one on the test rows is not "tied", nor below it: the summary
    names it in ``above_layers`` (TREC, 120 training rows: layer 2 chosen, layers 3-5 significantly above it),
    and the printout says so, so that "tied: 2" does not read as "layer 2 stands out"."""
    table = rows("m", [0.5, 0.6, 0.55, 0.8, 0.75], [True, False, False, True, True], chosen=2)
    table.loc[4, "score"] = 0.3  # layer 4 significantly below, layer 3 significantly above
    line = summarise(table).iloc[0]
    assert (line["layer"], line["tied_layers"], line["above_layers"], line["flat"]) == (2, "1-2", "3", False)
    peaked = summarise(rows("p", [0.5, 0.9, 0.6], [True, False, True], chosen=1)).iloc[0]
    assert (peaked["tied_layers"], peaked["above_layers"]) == ("1", "")

    from featx.study.views import format_summary

    class Result:
        summary, paired, failed, statuses, written = summarise(table), pd.DataFrame(columns=["corpus"]), [], {}, []
        warnings = ()

    assert "tied: 1-2; significantly above it on the test rows: 3)" in format_summary(Result())


def test_the_summary_stands_beside_the_majority_baseline_too():
    """A task's chance level differs (TREC's majority class 0.108, SST-2's 0.550): the summary and its printout
    give the majority-class (or training-mean) baseline beside the lexical one and the control."""
    table = rows("m", [0.5, 0.9, 0.6], [True, False, True], chosen=1)
    table["majority"] = 0.108
    summary = summarise(table)
    assert summary.iloc[0]["majority"] == pytest.approx(0.108)
    assert summary.iloc[0]["over_majority"] == pytest.approx(0.9 - 0.108)

    from featx.study.views import format_summary

    class Result:
        paired, failed, statuses, written, warnings = pd.DataFrame(columns=["corpus"]), [], {}, [], ()

    Result.summary = summary
    assert "accuracy 0.900 [0.800, 1.000], over majority 0.792, over lexical 0.300," in format_summary(Result())
