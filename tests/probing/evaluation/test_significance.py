"""Paired tests between layers: identical layers never differ, a planted one does, Holm is monotone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from featx.probing import evaluation as ev
from featx.probing.evaluation.significance import add_significance, corrected_t_test, holm, paired_bootstrap


def test_holm_matches_the_step_down_definition():
    adjusted = holm([0.01, 0.04, 0.03, np.nan])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert np.isnan(adjusted[3])


def test_identical_predictions_are_never_different():
    rng = np.random.default_rng(0)
    correct = rng.random(300) < 0.7
    assert paired_bootstrap(correct, correct) == 1.0
    scores = rng.random(5)
    assert corrected_t_test(scores, scores, 400, 100) == 1.0


def test_a_clearly_better_layer_is_different_and_a_slightly_noisy_copy_is_not():
    rng = np.random.default_rng(1)
    good = rng.random(400) < 0.9
    bad = rng.random(400) < 0.6
    assert paired_bootstrap(good, bad, seed=0) < 0.01
    flipped = good.copy()  # as many rows flip one way as the other: same accuracy, different rows
    flipped[np.flatnonzero(good)[:5]] = False
    flipped[np.flatnonzero(~good)[:5]] = True
    assert paired_bootstrap(good, flipped, seed=0) > 0.5
    flipped[np.flatnonzero(good)[5:7]] = False  # two more errors: not enough evidence
    assert paired_bootstrap(good, flipped, seed=0) > 0.05
    assert corrected_t_test([0.9, 0.91, 0.89, 0.92, 0.9], [0.6, 0.62, 0.58, 0.61, 0.6], 400, 100) < 0.01


def _table(accuracies):
    return pd.DataFrame(
        {
            "features": "main",
            "kind": "single",
            "layer": range(len(accuracies)),
            "pooling": "mean",
            "classifier": "logreg",
            "accuracy": accuracies,
        }
    )


@pytest.mark.parametrize("split", [False, True])
def test_add_significance_marks_best_and_adjacent_layers(split):
    rng = np.random.default_rng(2)
    n = 400
    y = rng.integers(0, 2, n)
    plan = ev.make_plan(y, np.where(np.arange(n) % 2, "test", "train") if split else None, 5, 0, ["a", "b"])
    tested = plan.folds[0][1] if split else np.arange(n)

    def predictions(accuracy, seed):
        out = np.full(n, -1)
        flip = np.random.default_rng(seed).random(len(tested)) > accuracy
        out[tested] = np.where(flip, 1 - y[tested], y[tested])
        return out

    layer0 = predictions(0.6, 10)
    layer1 = predictions(0.95, 11)
    layer2 = layer1.copy()  # identical to the best
    table = add_significance(
        _table([np.mean(p[tested] == y[tested]) for p in (layer0, layer1, layer2)]),
        {0: layer0, 1: layer1, 2: layer2},
        plan,
        y,
    )
    assert table.at[0, "significant_vs_best"] and table.at[0, "p_vs_best_holm"] < 0.05
    assert table.at[2, "p_vs_best"] == 1.0 and not table.at[2, "significant_vs_best"]
    assert table.at[1, "significant_vs_prev"] and not table.at[2, "significant_vs_prev"]
    assert np.isnan(table.at[0, "p_vs_prev"])


def test_best_layers_of_poolings_are_compared():
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    plan = ev.make_plan(y, None, 5, 0, ["a", "b"])
    right = y.copy()
    wrong = np.where(rng.random(n) < 0.4, 1 - y, y)
    table = pd.DataFrame(
        {
            "features": "main",
            "kind": "single",
            "layer": [0, 1, 0, 1],
            "pooling": ["mean", "mean", "cls", "cls"],
            "classifier": "logreg",
            "accuracy": [1.0, np.mean(wrong == y), np.mean(wrong == y), np.mean(wrong == y)],
        }
    )
    out = add_significance(table, {0: right, 1: wrong, 2: wrong, 3: wrong.copy()}, plan, y)
    assert out.at[0, "significant_pooling_vs_best"] is False and np.isnan(out.at[0, "p_pooling_vs_best"])
    assert out.at[2, "significant_pooling_vs_best"] and out.at[2, "p_pooling_vs_best"] < 0.05
    assert np.isnan(out.at[1, "p_pooling_vs_best"]) and np.isnan(out.at[3, "p_pooling_vs_best"])
