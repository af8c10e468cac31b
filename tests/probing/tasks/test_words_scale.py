"""Word probes at treebank scale (``featx/probing/tasks/word_fit.py``): the C path on a sample of whole
training sentences, one refit on the whole training part, and what must not change: the fit under the
sample size is the plain one, a sampled search predicts as the full one does, warm starts reach the cold
solution, sentences are never split and no test item reaches the scaler, the C search or the solver."""

from __future__ import annotations

import numpy as np
import pytest
from support.blobs import blobs

from featx.probing import evaluation as ev
from featx.probing.solvers import classifiers as clf
from featx.probing.solvers import softmax
from featx.probing.tasks import word_fit
from featx.probing.tasks.word_fit import fit_logreg_words, rows_of, sample_sentences, standardised

CS = (1e-3, 1e-2, 1e-1, 1.0)


def _corpus(n=2400, d=16, k=4, seed=0):
    """Blobs cut into sentences of 3 to 12 items: (X, real labels, control labels, groups, train, test)."""
    X, y = blobs(n=n, d=d, k=k, seed=seed, separation=0.8)
    rng = np.random.default_rng(seed + 1)
    lengths = rng.integers(3, 13, size=n)
    groups = np.repeat(np.arange(n), lengths)[:n]
    control = rng.integers(0, k, size=n)
    sentences = np.unique(groups)
    test_sentences = rng.choice(sentences, size=len(sentences) // 5, replace=False)
    is_test = np.isin(groups, test_sentences)
    return X, y, control, groups, np.flatnonzero(~is_test), np.flatnonzero(is_test)


def _old_fit(X, labels, train, groups, k, seed):
    """The fit before sampling: C path on all held-in training sentences, then one refit (the reference)."""
    scaler = ev.fit_scaler(X, train)
    Xs = scaler(X[train])
    targets = [y[train] for y in labels]
    fit_rows, val_rows = ev.inner_split(targets[0], np.arange(len(train)), seed, groups[train])
    found = ev.search_logreg(Xs, targets, fit_rows, val_rows, k, CS, False)
    chosen, init = [C for C, *_ in found], [theta for _, theta, *_ in found]
    solution = softmax.solve(Xs, targets, k, chosen, False, init=init, tol=clf.LOGREG_TOL)
    return [clf.logreg_from(solution.theta[p], solution.offsets[p], chosen[p], False) for p in range(len(labels))]


def test_sample_keeps_whole_sentences_within_the_cap():
    _, _, _, groups, train, _ = _corpus()
    for cap in (1, 50, 400, 1000):
        rows = sample_sentences(groups, train, cap, seed=3)
        assert np.all(np.diff(rows) > 0) and np.isin(rows, train).all()
        for sentence in np.unique(groups[rows]):  # a sentence's training items are all in or all out
            np.testing.assert_array_equal(rows[groups[rows] == sentence], train[groups[train] == sentence])
        assert len(rows) <= cap or len(np.unique(groups[rows])) == 1
        assert len(rows) > cap - 12  # filled up to the cap, less than one sentence short
        np.testing.assert_array_equal(rows, sample_sentences(groups, train, cap, seed=3))  # seeded
    assert sample_sentences(groups, train, len(train), seed=3) is train


def test_rows_of_is_a_view_only_for_one_run():
    X = np.arange(40, dtype=np.float32).reshape(10, 4)
    assert np.shares_memory(rows_of(X, np.arange(2, 7)), X)
    gaps = np.array([1, 2, 5])
    assert not np.shares_memory(rows_of(X, gaps), X)
    np.testing.assert_array_equal(rows_of(X, gaps), X[gaps])
    scaler = ev.Scaler(X[:6])
    np.testing.assert_array_equal(standardised(X, gaps, scaler), scaler(X[gaps]))


def test_under_the_cap_the_fit_is_the_plain_one():
    X, y, control, groups, train, test = _corpus()
    fitted = fit_logreg_words(X, [y, control], train, None, groups, 4, CS, False, seed=7)
    reference = _old_fit(X, [y, control], train, groups, 4, seed=7)
    X_test = fitted[0][1](X[test])
    for (model, _, C, _), old in zip(fitted, reference, strict=True):
        assert C == old.C
        np.testing.assert_array_equal(model.predict(X_test), old.predict(X_test))


def test_a_sampled_search_predicts_as_the_full_one(monkeypatch):
    X, y, control, groups, train, test = _corpus(n=4000)
    full = fit_logreg_words(X, [y, control], train, None, groups, 4, CS, False, seed=7)
    searched = []
    real = word_fit.search_logreg_on
    monkeypatch.setattr(
        word_fit, "search_logreg_on", lambda X_fit, *a, **k: searched.append(len(X_fit)) or real(X_fit, *a, **k)
    )
    monkeypatch.setattr(word_fit, "SEARCH_ITEMS", 1200)
    sampled = fit_logreg_words(X, [y, control], train, None, groups, 4, CS, False, seed=7)
    assert searched and searched[0] <= 1200 < 0.8 * len(train)
    X_test = full[0][1](X[test])
    real_full, real_sampled = full[0][0].predict(X_test), sampled[0][0].predict(X_test)
    assert np.mean(real_full == real_sampled) >= 0.98
    assert abs(np.mean(real_full == y[test]) - np.mean(real_sampled == y[test])) <= 0.01
    control_full, control_sampled = full[1][0].predict(X_test), sampled[1][0].predict(X_test)
    assert abs(np.mean(control_full == control[test]) - np.mean(control_sampled == control[test])) <= 0.02


@pytest.mark.parametrize("with_dev", [False, True])
def test_no_test_item_reaches_the_scaler_the_search_or_the_solver(monkeypatch, with_dev):
    X, y, control, groups, train, test = _corpus(n=3000)
    X[:, 0] = np.arange(len(X))  # an id column: which items a matrix holds
    dev = None
    if with_dev:
        held = np.isin(groups[train], np.unique(groups[train])[::5])
        train, dev = train[~held], train[held]
    seen: list[np.ndarray] = []
    real_solve, real_scaler = softmax.solve, ev.Scaler

    def solve(X_part, *args, **kwargs):
        seen.append(np.array(X_part[:, 0]))
        return real_solve(X_part, *args, **kwargs)

    scalers: list = []
    monkeypatch.setattr(softmax, "solve", solve)
    monkeypatch.setattr(word_fit, "SEARCH_ITEMS", 900)
    monkeypatch.setattr(ev, "Scaler", lambda rows: scalers.append(np.array(rows[:, 0])) or real_scaler(rows))
    fitted = fit_logreg_words(X, [y, control], train, dev, groups, 4, CS, False, seed=1)
    scaler = fitted[0][1]
    ids = [np.rint(part * scaler.scale[0] + scaler.mean[0]).astype(int) for part in seen]
    assert len(ids) >= 2 and scalers
    np.testing.assert_array_equal(np.sort(scalers[0]), np.sort(train))  # scaler: the training part only
    for part in ids:
        assert np.isin(part, train).all() and not np.isin(part, test).any()
    assert len(ids[0]) <= 900 and len(ids[-1]) == len(train)  # the path on the sample, the refit on all


def test_warm_started_fits_reach_the_cold_solution():
    X, y = blobs(n=900, d=10, k=4, seed=6)
    Xs = ev.Scaler(X)(X)
    cold = softmax.solve(Xs, [y], 4, [1.0], tol=1e-7, max_iter=2000)
    start = softmax.solve(Xs, [y], 4, [0.01], tol=1e-3).theta
    warm = softmax.solve(Xs, [y], 4, [1.0], init=list(start), tol=1e-7, max_iter=2000)
    # (How many iterations the warm start saves depends on the CPU's rounding: no claim on that here.)
    assert cold.converged.all() and warm.converged.all()
    np.testing.assert_allclose(warm.theta[0], cold.theta[0], rtol=1e-3, atol=5e-4)  # float32 arithmetic
    np.testing.assert_array_equal(np.argmax(warm.scores(Xs, 0), 1), np.argmax(cold.scores(Xs, 0), 1))


def test_the_scaler_matches_numpy_over_several_blocks(monkeypatch):
    from featx.probing.evaluation import core

    monkeypatch.setattr(core, "SCALER_BLOCK", 64)
    rng = np.random.default_rng(2)
    X = (rng.standard_normal((1000, 6)) * 3 + 50).astype(np.float32)
    X[:, 2] = 7.0  # a constant feature keeps scale 1
    scaler = ev.Scaler(X)
    np.testing.assert_allclose(scaler.mean, X.mean(axis=0, dtype=np.float64), rtol=1e-6)
    expected = X.std(axis=0, dtype=np.float64)
    expected[2] = 1.0
    np.testing.assert_allclose(scaler.scale, expected, rtol=1e-6)
    assert scaler.mean.dtype == scaler.scale.dtype == np.float32
