"""A val split in featx fit, as featx probe uses it: a word label's final head takes its C from the val
sentences (or early-stops its mlp on them), and an mlp head of a sentence label early-stops on the val rows;
without a val split the holdouts are as before."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from support.shared_files import copy_features

import featx
from featx.deploy import head as heads
from featx.probing.evaluation import core


def _with_val(source, folder, every: int, limit: int | None = None):
    """A copy of ``source`` with every ``every``-th training row (sentence) moved to a val split (the first
    ``limit`` of them)."""
    path = copy_features(source, folder)
    with h5py.File(path, "r+") as file:
        split = file["rows/split"]
        values = [value.decode() if isinstance(value, bytes) else value for value in split[:]]
        for row in [row for row, value in enumerate(values) if value == "train"][::every][:limit]:
            split[row] = "val"
    return path


@pytest.fixture(scope="module")
def val_words(word_features, tmp_path_factory):
    """The toy treebank's features with every fourth training sentence moved to a val split."""
    return _with_val(word_features[0], tmp_path_factory.mktemp("val-words"), 4)


def _spied(monkeypatch) -> tuple[list, list]:
    """Every head's (rows, dev) and every holdout ``inner_split`` draws, recorded."""
    heads_fitted: list = []
    holdouts: list = []
    real_head, real_split = heads.fit_head, core.inner_split

    def fit_head(classifier, X, *args, **kwargs):
        dev = kwargs.get("dev", args[6] if len(args) > 6 else None)
        heads_fitted.append((len(X), None if dev is None else np.asarray(dev)))
        return real_head(classifier, X, *args, **kwargs)

    def inner_split(y, rows, seed, groups=None):
        holdouts.append(len(rows))
        return real_split(y, rows, seed, groups)

    monkeypatch.setattr(heads, "fit_head", fit_head)
    monkeypatch.setattr(core, "inner_split", inner_split)
    return heads_fitted, holdouts


def _val_words(path) -> tuple[np.ndarray, np.ndarray, int]:
    """Each labelled word's split value, and how many val sentences there are."""
    with featx.open(path) as file:
        split = np.asarray(file.split, dtype=str)
        sentence = file.word_sentence()[file.word_labels("upos") >= 0]
    return split[sentence], sentence, int((split == "val").sum())


@pytest.mark.slow
@pytest.mark.parametrize("classifier", ["logreg", "mlp"])
def test_a_word_label_takes_its_c_from_the_val_sentences_as_probe_does(val_words, monkeypatch, classifier):
    heads_fitted, holdouts = _spied(monkeypatch)
    fitted = featx.fit(val_words, label="upos", layer="1", pooling="mean", folds=3, classifier=classifier, write=False)
    values, _, n_sentences = _val_words(val_words)
    training = values[values != "test"]
    n_final, dev = heads_fitted[-1]
    assert n_final == len(training) and np.array_equal(dev, np.flatnonzero(training == "val"))
    assert len(holdouts) == 3  # the choice's folds only: the final head draws no holdout
    assert fitted.probe.info["selection"]["n_val"] == int((training == "val").sum())
    chosen = "early-stopped" if classifier == "mlp" else "its C chosen"
    assert (
        f"trained on the {int((training == 'train').sum())} train words, {chosen} on the "
        f"{int((training == 'val').sum())} val words of {n_sentences} sentences (as featx probe trains)"
    ) in fitted.summary()
    probed = featx.probe(
        val_words, label="upos", layers="1", poolings="mean", classifiers=classifier, control=False, write=False, jobs=1
    )
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert fitted.test["score"] == pytest.approx(float(row["accuracy"]), abs=1e-9)
    # enough val words (well over MIN_VAL_ROWS): no note on too few
    assert not any("val words chose" in line for line in [*fitted.summary(), *probed.notes])


def test_too_few_val_rows_to_choose_on_are_noted_by_fit_and_probe(split_features, tmp_path):
    """Three val rows chose C without a word: fit and probe now say the choice is unreliable, and what to do."""
    from featx.probing import MIN_VAL_PER_CLASS, MIN_VAL_ROWS

    path = _with_val(split_features, tmp_path, 1, limit=3)  # training rows 1 (pos), 2 and 4 (neg)
    after = (
        f": a choice on so few is unreliable (featx notes under {MIN_VAL_ROWS} val rows, or under {MIN_VAL_PER_CLASS} "
        "of a class); add val rows, or mark them train so that a holdout of the train rows chooses instead"
    )
    fitted = featx.fit(path, label="label", layer="1", pooling="mean", folds=3, write=False)
    assert f"only 3 val rows (1 of class 'pos') chose the saved head's C{after}" in fitted.summary()
    probed = featx.probe(
        path, label="label", layers="1", poolings="mean", classifiers="logreg", control=False, write=False, jobs=1
    )
    chosen = "the probes' C and the row chosen on the training part"
    assert f"only 3 val rows (1 of class 'pos') chose {chosen}{after}" in probed.notes
    ridge = featx.fit(path, label="score", layer="1", pooling="mean", folds=3, write=False)
    assert "only 3 val rows chose the saved head's alpha: a choice on so few is unreliable (featx notes under " in (
        "\n".join(ridge.summary())
    )


def test_without_a_val_split_a_word_head_holds_out_sentences_as_before(word_features, monkeypatch):
    heads_fitted, holdouts = _spied(monkeypatch)
    fitted = featx.fit(word_features[0], label="upos", layer="1", pooling="mean", folds=3, write=False)
    # the final head's C: a sentence holdout (the last head fitted is the control task's, on the same words)
    assert heads_fitted[-2][1] is None and len(holdouts) == 3 + 1 + 1
    assert fitted.probe.info["selection"]["n_val"] is None
    assert any(line.startswith("trained on ") and "outside the test split" in line for line in fitted.summary())


@pytest.fixture(scope="module")
def val_rows(split_features, tmp_path_factory):
    """The deploy tests' sentences with every third training row moved to a val split."""
    return _with_val(split_features, tmp_path_factory.mktemp("val-rows"), 3)


def test_an_mlp_head_early_stops_on_the_val_rows_as_probe_does(val_rows, monkeypatch):
    heads_fitted, holdouts = _spied(monkeypatch)
    fitted = featx.fit(val_rows, label="label", layer="1", pooling="mean", folds=3, classifier="mlp", write=False)
    with featx.open(val_rows) as file:
        split = np.asarray(file.split, dtype=str)
    training = split[split != "test"]
    assert np.array_equal(heads_fitted[-1][1], np.flatnonzero(training == "val")) and len(holdouts) == 3
    n_train, n_val = int((split == "train").sum()), int((split == "val").sum())
    trained = f"trained on the {n_train} train rows, early-stopped on the {n_val} val rows (as featx probe trains)"
    assert trained in fitted.summary()
    assert any(", mlp (early-stopped), of 1 candidate(s)" in line for line in fitted.summary())  # it said "C nan"
    probed = featx.probe(
        val_rows, label="label", layers="1", poolings="mean", classifiers="mlp", control=False, write=False, jobs=1
    )
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert fitted.test["score"] == pytest.approx(float(row["accuracy"]), abs=1e-9)


def test_without_a_val_split_an_mlp_head_is_the_one_fitted_before():
    """The mlp head without dev rows: the scaler on every row, early-stopped on ``inner_split``'s holdout of them,
    as ``head._fit_mlp`` fitted it before it went through ``evaluation.fit_mlp``."""
    import torch

    from featx.probing.solvers import classifiers as clf

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 6)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.standard_normal(60) > 0).astype(np.int64)
    head = heads.fit_head("mlp", X, y, ["a", "b"], (1.0,), (1.0,), False, 3)
    rows = np.arange(60)
    scaler = core.fit_scaler(X, rows)
    Xs = torch.from_numpy(np.ascontiguousarray(scaler(X)))
    fit_rows, val_rows = core.inner_split(y, rows, 3)
    torch.manual_seed(3)
    model = clf.build_mlp(6, 2)
    clf.train_head(model, lambda r: Xs[r], y, fit_rows, val_rows, 2, 3, False)
    expected = clf.head_scores(model, lambda r: Xs[r], rows).argmax(axis=1)
    assert np.array_equal(head.predict_codes(X), expected)
    np.testing.assert_allclose(head.weights["w1"], model.state_dict()["0.weight"].double().numpy().T)


@pytest.mark.parametrize("level", ["word", "sentence"])
def test_a_val_part_without_a_train_part_is_the_training_part(word_features, split_features, tmp_path, level):
    """A split of val and test only (a treebank's dev and test files): the val rows are the training rows, their C
    from a holdout of them, as featx probe's word probes train on a dev part. C was chosen on every training row
    and fitted on none (a sentence label: ZeroDivisionError)."""
    path = copy_features(word_features[0] if level == "word" else split_features, tmp_path)
    with h5py.File(path, "r+") as file:
        split = file["rows/split"]
        values = [value.decode() if isinstance(value, bytes) else value for value in split[:]]
        for row in [row for row, value in enumerate(values) if value == "train"]:
            split[row] = "dev"
    label = "upos" if level == "word" else "label"
    fitted = featx.fit(path, label=label, layer="1", pooling="mean", folds=3, write=False)
    assert fitted.probe.info["selection"]["n_val"] is None
    assert any(line.startswith("trained on ") and "outside the test split" in line for line in fitted.summary())
