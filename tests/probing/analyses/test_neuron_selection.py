"""The random-k baseline of ``featx neurons`` (the mean of several draws) and the paired test of top k against it."""

from __future__ import annotations

import numpy as np
import pytest

from featx.probing import evaluation as ev
from featx.probing.analyses.neuron_selection import RANDOM_DRAWS, selection_curve, summarise_draws
from featx.probing.analyses.neurons import rank_neurons
from featx.probing.analyses.target import Task


def _task(y: np.ndarray, split: bool) -> Task:
    parts = np.where(np.arange(len(y)) % 2 == 0, "train", "test") if split else None
    plan = ev.make_plan(y, parts, 5, 0, ["0", "1"])
    return Task("a", np.arange(len(y)), y, ["0", "1"], plan)


def _planted(informative: bool, n: int = 240, width: int = 20):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, width)).astype(np.float32)
    X[:, [3, 11]] += 2.0 * (2 * y[:, None] - 1)  # the planted neurons
    if not informative:
        y = rng.integers(0, 2, n)  # a label the neurons know nothing of
    return X, y


def _curve(X, y, split: bool, seen: list | None = None, draws: int = RANDOM_DRAWS):
    task = _task(y, split)

    def rank(rows, seed):
        if seen is not None:
            seen.append(rows)
        return rank_neurons(X, y, rows, seed)

    return task, {(r["selection"], r["ranking"]): r for r in selection_curve(X, task, rank, (0.1,), 0, 200, draws)}


@pytest.mark.parametrize("split", [True, pytest.param(False, marks=pytest.mark.slow)])  # 5 folds: 0.7 s
def test_top_k_beats_the_mean_of_random_draws_significantly(split):
    X, y = _planted(informative=True)
    seen: list = []
    task, rows = _curve(X, y, split, seen)
    top, random = rows[("top", "probe")], rows[("random", "-")]
    assert random["draws"] == RANDOM_DRAWS and top["draws"] == 1 and top["k"] == random["k"] == 2
    assert top["accuracy"] > 0.95 and random["accuracy"] < top["accuracy"] - 0.1
    assert top["p_vs_random_holm"] < 0.05 and top["significant_vs_random"] is True
    if split:  # the exact sign-flip test: far below 1 / (B + 1), the floor a Monte Carlo of this run's 200 had
        assert 0 < top["p_vs_random"] < 1e-20 and top["p_vs_random_holm"] == pytest.approx(2 * top["p_vs_random"])
    assert random["n_test"] == top["n_test"] == sum(len(test) for _, test in task.plan.folds)
    assert "p_vs_random" not in rows[("bottom", "probe")]  # only the top k are tested
    # no test row ranks a neuron: each ranking saw exactly its fold's training rows
    assert len(seen) == len(task.plan.folds)
    for rows_seen, (train, test) in zip(seen, task.plan.folds, strict=True):
        assert np.array_equal(rows_seen, train) and not np.intersect1d(rows_seen, test).size


def test_an_uninformative_label_is_not_significant():
    X, y = _planted(informative=False)
    _, rows = _curve(X, y, split=True, draws=3)
    assert rows[("random", "-")]["draws"] == 3  # --draws
    for ranking in ("probe", "anova"):
        assert rows[("top", ranking)]["p_vs_random_holm"] > 0.05
        assert rows[("top", ranking)]["significant_vs_random"] is False


def test_the_mean_of_draws_is_their_mean_accuracy_with_an_interval_over_rows():
    y = np.array([0, 0, 1, 1] * 10)
    task = _task(y, split=True)
    test = task.plan.folds[0][1]
    right, wrong = ev.FoldResult(y[test].copy()), ev.FoldResult(1 - y[test])
    half = ev.FoldResult(np.where(np.arange(len(test)) < len(test) // 2, y[test], 1 - y[test]))
    row = summarise_draws(task, [[right, wrong, half]], 200, 0)
    assert row["accuracy"] == pytest.approx(0.5) and row["n_test"] == len(test)
    # each row's three copies are resampled together: a row's mean correctness is 1/3 or 2/3, so the interval is
    # narrower than one draw's but not collapsed to the point
    single = summarise_draws(task, [[half]], 200, 0)
    assert row["accuracy_low"] < 0.5 < row["accuracy_high"]
    assert row["accuracy_high"] - row["accuracy_low"] < single["accuracy_high"] - single["accuracy_low"]
