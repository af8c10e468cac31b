"""Paired tests between layers: identical layers never differ, a planted one does, the tests are exact (valid at
every n: McNemar's exact test on rows, a sign-flip randomisation over groups), Holm is monotone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from featx.probing import evaluation as ev
from featx.probing.evaluation.significance import (
    add_significance,
    corrected_t_test,
    holm,
    lattice_sign_flip,
    mcnemar_exact,
    paired_sign_flip,
)


def test_holm_matches_the_step_down_definition():
    adjusted = holm([0.01, 0.04, 0.03, np.nan])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert np.isnan(adjusted[3])


def test_identical_predictions_are_never_different():
    rng = np.random.default_rng(0)
    correct = rng.random(300) < 0.7
    assert paired_sign_flip(correct, correct) == 1.0
    scores = rng.random(5)
    assert corrected_t_test(scores, scores, 400, 100) == 1.0


def test_a_clearly_better_layer_is_different_and_a_slightly_noisy_copy_is_not():
    rng = np.random.default_rng(1)
    good = rng.random(400) < 0.9
    bad = rng.random(400) < 0.6
    assert paired_sign_flip(good, bad, seed=0) < 0.01
    flipped = good.copy()  # as many rows flip one way as the other: same accuracy, different rows
    flipped[np.flatnonzero(good)[:5]] = False
    flipped[np.flatnonzero(~good)[:5]] = True
    assert paired_sign_flip(good, flipped, seed=0) > 0.5
    flipped[np.flatnonzero(good)[5:7]] = False  # two more errors: not enough evidence
    assert paired_sign_flip(good, flipped, seed=0) > 0.05
    assert corrected_t_test([0.9, 0.91, 0.89, 0.92, 0.9], [0.6, 0.62, 0.58, 0.61, 0.6], 400, 100) < 0.01


@pytest.mark.parametrize(("n01", "n10"), [(0, 1), (1, 0), (5, 0), (0, 6), (3, 10), (20, 35), (50, 50), (7, 1)])
def test_mcnemar_exact_is_the_binomial_sign_test(n01, n10):
    from scipy import stats

    assert mcnemar_exact(n01, n10) == pytest.approx(stats.binomtest(n01, n01 + n10, 0.5).pvalue, rel=1e-12)
    a = np.r_[np.ones(n01, bool), np.zeros(n10, bool), np.ones(4, bool)]  # 4 rows both get right: no evidence
    b = np.r_[np.zeros(n01, bool), np.ones(n10, bool), np.ones(4, bool)]
    assert paired_sign_flip(a, b) == pytest.approx(mcnemar_exact(n01, n10), rel=1e-12)


def test_few_differing_rows_are_never_significant():
    assert paired_sign_flip(np.array([True]), np.array([False])) == 1.0  # one test row: p = 1, not 1/(B+1)
    rows = np.r_[np.ones(5, bool), np.zeros(20, bool)]
    assert paired_sign_flip(rows, np.zeros(25, bool)) == pytest.approx(2 / 32)  # 5 rows all for a: 0.0625
    assert paired_sign_flip(np.zeros(25, bool), rows) == pytest.approx(2 / 32)


def _shift_bootstrap(diff, n_boot, seed):
    """The paired bootstrap featx used before (shift method): a reference for large n only."""
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(axis=1)
    observed = diff.mean()
    return (np.count_nonzero(np.abs(means - observed) >= abs(observed) - 1e-12) + 1) / (n_boot + 1)


@pytest.mark.parametrize("gap", [10, 20, 30, 40])
def test_at_large_n_the_exact_test_agrees_with_the_bootstrap(gap):
    rng = np.random.default_rng(4)
    a = rng.random(2000) < 0.8
    b = a.copy()
    b[rng.choice(np.flatnonzero(a), 100, replace=False)] = False  # 100 rows only a gets right
    b[rng.choice(np.flatnonzero(~a), 100 - gap, replace=False)] = True  # and 100 - gap only b does
    reference = _shift_bootstrap(a.astype(float) - b, 2000, 0)  # 0.50, 0.15, 0.028, 0.0025
    assert 0.001 < reference < 0.6
    assert paired_sign_flip(a, b) == pytest.approx(reference, rel=0.25, abs=0.002)


def test_groups_flip_as_units_exactly_on_a_planted_case():
    groups = np.repeat(np.arange(6), 3)  # 6 sentences of 3 words; a is ahead in 4 of them
    a, b = np.ones(18, bool), np.ones(18, bool)
    b[[0, 1, 3, 6, 9, 10, 11]] = False  # per-sentence differences a - b: 2, 1, 1, 3, 0, 0
    a[12] = False  # sentence 4: -1
    # 5 non-zero sentence sums (2, 1, 1, 3, -1), observed total 6 of at most 8: |total| >= 6 leaves at most one
    # sum of size 1 against the others, 4 patterns each way, 8 of the 32
    sums = np.array([2, 1, 1, 3, -1])
    signs = np.array(np.meshgrid(*[[-1, 1]] * 5)).reshape(5, -1).T
    expected = np.mean(np.abs(signs @ sums) >= 6)
    assert expected == pytest.approx(8 / 32)
    assert paired_sign_flip(a, b, groups=groups) == pytest.approx(expected)
    assert paired_sign_flip(a, b, groups=groups) > paired_sign_flip(a, b)  # words alone overstate the evidence


def test_many_groups_of_correctness_are_exact_and_other_differences_a_seeded_monte_carlo_above_its_floor():
    """300 groups of 4 rows: each group's count of rows a gets right minus b's is a whole number, so the test counts
    all 2^m sign patterns (lattice_p) whatever n_boot and the seed; the same differences halved are not whole, and
    get the Monte Carlo p of n_boot patterns, never below 1 / (B + 1)."""
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(300), 4)
    a = rng.random(1200) < 0.8
    b = np.where(rng.random(1200) < 0.9, a, ~a)  # a clearly ahead
    p = paired_sign_flip(a, b, 999, 3, groups)
    assert 0 < p < 1e-10 and p == paired_sign_flip(a, b, 10, 7, groups)  # no draws, no floor
    assert paired_sign_flip(a * 0.5, b * 0.5, 999, 3, groups) == pytest.approx(1 / 1000)  # the floor (b+1)/(B+1)
    close = np.where(rng.random(1200) < 0.9, a, rng.random(1200) < 0.65)  # a little ahead
    exact = paired_sign_flip(a, close, 999, 3, groups)  # 0.048
    drawn = paired_sign_flip(a * 0.5, close * 0.5, 4000, 0, groups)  # the Monte Carlo estimate of the same p
    assert 0.01 < exact < 0.2 and drawn == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize("seed", range(6))
def test_the_lattice_test_counts_every_sign_pattern(seed):
    """Differences in steps of 1/draws (correctness against a mean over draws): the same p as enumerating all 2^m
    patterns (paired_sign_flip, up to 16 units), by rows or by groups, and McNemar's when every step is one size."""
    rng = np.random.default_rng(seed)
    draws, m = int(rng.integers(2, 7)), int(rng.integers(3, 14))
    a, b = rng.integers(0, 2, m).astype(float), rng.integers(0, draws + 1, m) / draws
    groups = rng.integers(0, m, m)
    assert lattice_sign_flip(a, b, draws) == pytest.approx(paired_sign_flip(a, b), rel=1e-12)
    assert lattice_sign_flip(a, b, draws, groups) == pytest.approx(paired_sign_flip(a, b, groups=groups), rel=1e-12)
    assert lattice_sign_flip(a, a, draws) == 1.0
    right, wrong = rng.random(40) < 0.7, rng.random(40) < 0.5
    assert lattice_sign_flip(right, wrong, 1) == pytest.approx(paired_sign_flip(right, wrong), rel=1e-12)


def test_the_lattice_test_has_no_monte_carlo_floor():
    rng = np.random.default_rng(6)
    a, b = (rng.random(600) < 0.9).astype(float), rng.binomial(10, 0.6, 600) / 10  # top k far above 10 draws
    assert paired_sign_flip(a, b, 999, 0) == pytest.approx(1 / 1000)  # the Monte Carlo floor 1 / (B + 1)
    assert 0 < lattice_sign_flip(a, b, 10) < 1e-20
    close = (rng.random(600) < 0.66).astype(float)  # a small difference: the Monte Carlo p estimates the exact one
    exact = lattice_sign_flip(close, b, 10)  # 0.072
    assert 0.01 < exact < 0.2 and paired_sign_flip(close, b, 4000, 0) == pytest.approx(exact, abs=0.01)
    with pytest.raises(ValueError, match="whole multiples of 1/10"):
        lattice_sign_flip(a, b + 0.03, 10)


def test_folds_that_all_differ_alike_get_the_sign_test_not_p_zero():
    assert corrected_t_test([0.91] * 5, [0.90] * 5, 400, 100) == pytest.approx(2 / 32)  # 2^(1-k)
    assert corrected_t_test([0.90] * 10, [0.91] * 10, 900, 100) == pytest.approx(2 / 1024)
    assert corrected_t_test([0.9], [0.8], 400, 100) == 1.0  # one fold shows nothing


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
