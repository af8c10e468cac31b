"""Erasure and dimensions that are constant on the fitting rows (MiniLM has some, exactly zero): they are
left bit-identical, and no standardizing probe reads the erased label back from them."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

import featx
from featx.probing.analyses.erase import erase
from featx.probing.analyses.erasure import fit_eraser

CONSTANTS = {1: 0.0, 4: 0.0, 7: -0.0, 12: 0.0, 15: 0.25}  # position: value; mostly exact zeros, as in MiniLM


def with_constants(X: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """``X`` (float32) with the ``CONSTANTS`` dimensions inserted at their positions."""
    columns = list(np.asarray(X, dtype=np.float32).T)
    for position, value in sorted(CONSTANTS.items()):
        columns.insert(position, np.full(len(X), value, dtype=np.float32))
    return np.column_stack(columns), sorted(CONSTANTS)


def planted(n: int, seed: int, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A label shifted into the first dimensions (binary: along one direction of three; more classes: one
    dimension each), among noise dimensions: 11 in all."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.standard_normal((n, 11))
    if n_classes == 2:
        X[:, :3] += np.outer(2 * y - 1, [1.5, -1.0, 0.5])
    else:
        X[np.arange(n), y] += 2.0
    return X, y


def standardized_accuracy(X_train, y_train, X_test, y_test) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(X_train, y_train)
    return float(np.mean(model.predict(X_test) == y_test))


def chance_limit(y_test: np.ndarray) -> float:
    """The majority rate plus three binomial standard errors."""
    majority = np.bincount(y_test).max() / len(y_test)
    return float(majority + 3 * np.sqrt(majority * (1 - majority) / len(y_test)))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", ["leace", "inlp"])
def test_constant_dimensions_stay_bit_identical_and_hide_the_label(method, n_classes):
    X, y = planted(3000, seed=1, n_classes=n_classes)
    X, constant = with_constants(X)
    train, test = slice(0, 2000), slice(2000, None)
    assert standardized_accuracy(X[train], y[train], X[test], y[test]) > 0.8
    eraser = fit_eraser(method, X[train], y[train], n_classes)
    erased = eraser(X)
    assert eraser.rank >= 1 and not eraser.left[constant].any() and not eraser.right[:, constant].any()
    assert erased[:, constant].tobytes() == X[:, constant].tobytes()  # -0.0 stays -0.0
    assert standardized_accuracy(erased[train], y[train], erased[test], y[test]) <= chance_limit(y[test])


def test_a_test_row_off_a_training_constant_is_not_moved_there():
    X, y = planted(600, seed=2)
    X, constant = with_constants(X)
    eraser = fit_eraser("leace", X[:400], y[:400], 2)
    shifted = X[400:].copy()
    shifted[:, constant] += 3.0  # a value the training rows never had: neither kept nor read by the edit
    np.testing.assert_array_equal(eraser(shifted)[:, constant], shifted[:, constant])
    np.testing.assert_array_equal(np.delete(eraser(shifted), constant, 1), np.delete(eraser(X[400:]), constant, 1))


def test_live_dimensions_are_the_varying_ones():
    from featx.probing.analyses.erasure import live_dimensions

    X = np.array([[0.1, 0.0, 1.0, 5.0], [0.1, 0.0, 2.0, 5.0 + 1e-14], [0.1, 0.0, 3.0, 5.0]])
    assert list(live_dimensions(X)) == [False, False, True, False]  # the last: variance ~1e-29 of the largest
    assert not live_dimensions(np.zeros((0, 3))).any()
    assert fit_eraser("leace", np.ones((10, 3)), np.arange(10) % 2, 2).rank == 0  # nothing varies: no edit


@pytest.mark.slow
@pytest.mark.parametrize("method, label", [("leace", "a"), ("inlp", "a"), ("leace", "c"), ("inlp", "c")])
def test_a_standardized_probe_is_at_chance_on_every_erased_layer(planted_file, tmp_path, method, label):
    source = shutil.copy(planted_file, tmp_path / "constants.h5")
    with h5py.File(source, "r+") as file:
        pooled = file["pooled/mean"]
        for position, value in CONSTANTS.items():
            pooled[:, :, position] = value
    output = tmp_path / "erased.h5"
    erase(source, label=label, method=method, folds=3, output=output, jobs=1, amnesic="none")
    with featx.open(source) as original, featx.open(output) as erased:
        y, half = erased.labels(label), erased.n_rows // 2
        for layer in erased.layers:
            X, E = original.features("mean", layer), erased.features("mean", layer)
            assert E[:, sorted(CONSTANTS)].tobytes() == X[:, sorted(CONSTANTS)].tobytes()
            assert standardized_accuracy(E[:half], y[:half], E[half:], y[half:]) <= chance_limit(y[half:]), layer
