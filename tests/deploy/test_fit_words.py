"""featx fit / predict of a word label: folds by sentence, never a test word in a fit, the word-type baseline,
the bundle, word vectors of new sentences equal to the stored ones, predict on CoNLL-U and on plain texts."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.deploy import head as heads
from featx.deploy.choose import cv_folds
from featx.deploy.probe import Probe
from featx.errors import InputError
from featx.probing import evaluation as ev


@pytest.fixture(scope="module")
def fitted(word_features, tmp_path_factory):
    features, _ = word_features
    output = tmp_path_factory.mktemp("bundle") / "upos.featx"
    return featx.fit(features, label="upos", folds=3, output=output, jobs=1)


@pytest.fixture(scope="module")
def sentence_bundle(split_features, tmp_path_factory):
    output = tmp_path_factory.mktemp("sentence") / "label.featx"
    return featx.fit(split_features, label="label", layer="0", pooling="mean", folds=3, output=output).path


def _stored(features, layer: int, pooling: str):
    with featx.open(features) as file:
        split = np.asarray(file.split, dtype=str)[file.word_sentence()]
        names = np.asarray(file.word_label_names("upos"), dtype=object)
        return file.word_features(pooling, layer), split == "test", names[file.word_labels("upos")]


@pytest.mark.slow
def test_a_word_label_gives_a_word_probe_chosen_on_training_words(fitted, word_features):
    features, _ = word_features
    probe = featx.load(fitted.path)
    assert probe.level == "word" and probe.spec.kind == "single" and probe.pooling in ("first", "last", "mean")
    assert len(fitted.candidates) == 3 * 3  # layers 0-2 x first, last, mean
    X, test, truth = _stored(features, probe.spec.layers[0], probe.pooling)
    assert fitted.test["n"] == int(test.sum())
    assert fitted.test["score"] == pytest.approx(np.mean(probe.predict_features(X[test]) == truth[test]))
    lines = fitted.summary()
    assert lines[0] == "word label 'upos' (classification, 4 classes)"
    assert any(line.startswith("lexical baseline (most frequent class of each word type") for line in lines)
    manifest = json.loads((fitted.path / "manifest.json").read_text())
    assert manifest["level"] == "word" and manifest["pooling"] == probe.pooling
    assert "a sentence's words in one fold" in manifest["selection"]["on"]


@pytest.mark.slow
def test_the_word_type_baseline_is_the_training_words_most_frequent_tag(fitted, word_features):
    features, _ = word_features
    with featx.open(features) as file:
        forms = np.array([form.lower() for form in file.word_forms()])
        _, test, truth = _stored(features, 0, "first")
    best = {form: pd.Series(truth[~test & (forms == form)]).mode()[0] for form in set(forms[~test])}
    majority = pd.Series(truth[~test]).value_counts().index[0]
    by_hand = np.mean([best.get(form, majority) == tag for form, tag in zip(forms[test], truth[test], strict=True)])
    assert fitted.test["lexical"] == pytest.approx(by_hand)
    # and featx probe's word-type control task, learnt by the chosen head on the training words
    control = next(line for line in fitted.summary() if line.startswith("control task"))
    assert control.startswith(f"control task (a random class per word type): {fitted.test['control']:.4f} on the same")
    assert 0 <= fitted.test["control"] <= 1


@pytest.mark.slow
def test_the_test_interval_resamples_whole_test_sentences(fitted, word_features):
    features, _ = word_features
    probe = featx.load(fitted.path)
    X, test, truth = _stored(features, probe.spec.layers[0], probe.pooling)
    with featx.open(features) as file:
        sentence = file.word_sentence()[test]
    codes = {name: code for code, name in enumerate(probe.classes)}
    y = np.array([codes[tag] for tag in truth[test]])
    predicted = np.array([codes[tag] for tag in probe.predict_features(X[test])])
    by_sentence = ev.bootstrap_intervals(y, predicted, len(codes), 1000, 0, sentence)["accuracy"]
    by_word = ev.bootstrap_intervals(y, predicted, len(codes), 1000, 0)["accuracy"]
    assert (fitted.test["low"], fitted.test["high"]) == pytest.approx(by_sentence)
    assert (fitted.test["low"], fitted.test["high"]) != pytest.approx(by_word)


def test_folds_keep_every_sentence_whole():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(30), rng.integers(1, 9, size=30))
    y = rng.integers(0, 4, size=len(groups))
    y[0] = 5  # a class of one word: no refusal, it simply cannot be in every fold
    folds = cv_folds(y, 6, 5, 0, groups)
    assert len(folds) == 5
    for train, held_out in folds:
        assert not set(groups[train]) & set(groups[held_out])
    assert sorted(np.concatenate([held for _, held in folds]).tolist()) == list(range(len(y)))


def test_no_fit_ever_sees_a_test_word(word_features, monkeypatch):
    features, _ = word_features
    seen: list[np.ndarray] = []
    real = heads.fit_head
    monkeypatch.setattr(heads, "fit_head", lambda c, X, *a, **k: seen.append(X) or real(c, X, *a, **k))
    result = featx.fit(features, label="upos", layer="1", pooling="mean", folds=3, write=False, jobs=1)
    X, test, _ = _stored(features, 1, "mean")
    training = {row.tobytes() for row in X[~test]}
    assert seen and all(row.tobytes() in training for fitted_rows in seen for row in fitted_rows)
    assert len(seen[-1]) == int((~test).sum())  # the final fit: every training word
    assert result.chosen.spec.layers == (1,)


@pytest.mark.slow
@pytest.mark.parametrize("classifier", ["logreg", "mlp"])
def test_every_holdout_keeps_a_sentence_whole(word_features, monkeypatch, classifier):
    """The holdouts that choose C (or stop an mlp early), in the folds and for the final head, hold out whole
    training sentences, as featx probe's word probes do: never a word whose sentence-mates were fitted on."""
    from featx.probing.evaluation import core

    features, _ = word_features
    splits: list[tuple] = []

    def spy(real):
        def inner_split(y, rows, seed, groups=None):
            fit_rows, val_rows = real(y, rows, seed, groups)
            splits.append((groups, fit_rows, val_rows))
            return fit_rows, val_rows

        return inner_split

    monkeypatch.setattr(core, "inner_split", spy(core.inner_split))  # the C holdout and the mlp's (core.fit_mlp)
    featx.fit(features, label="upos", layer="1", pooling="mean", folds=3, classifier=classifier, write=False, jobs=1)
    with featx.open(features) as file:
        sentence = file.word_sentence()[file.word_labels("upos") >= 0]
        training = sentence[~np.isin(sentence, np.flatnonzero(np.asarray(file.split, dtype=str) == "test"))]
    assert len(splits) == 3 + 1 + 1  # one holdout per fold, one for the final head, one for the control task's
    for groups, fit_rows, val_rows in splits:
        assert groups is not None and not set(groups[fit_rows]) & set(groups[val_rows])
    final = splits[-2][0]  # the final head's words, in order: their sentences' codes (the control's, the same)
    assert np.array_equal(splits[-1][0], final)
    assert len(final) == len(training) and np.array_equal(np.unique(training, return_inverse=True)[1], final)


@pytest.mark.parametrize("classifier", ["logreg", "svm", "mlp"])
@pytest.mark.slow
def test_without_a_val_split_fit_and_probe_hold_out_the_same_sentences(word_features, classifier, monkeypatch):
    """featx probe's word probes and featx fit's word heads choose C (stop an mlp) on one holdout of whole
    training sentences, stratified by tag (``evaluation.inner_split``): the same holdout, so the same C and the same
    head, predicting the same tags of the test words. An svm's or mlp's final fit was other code in each (the probe
    held the sentences out before the scaler and never refitted the svm on the whole training part): one function
    fits both now (``probing.fit_word_head``). The probe drew an unstratified sentence holdout of its own before."""
    from featx.probing.evaluation import groups
    from featx.probing.tasks import word_eval

    drawn: list[tuple[np.ndarray, np.ndarray]] = []
    real = groups.stratified_holdout

    def spy(y, codes, parts, seed):
        held = real(y, codes, parts, seed)
        drawn.append((np.asarray(codes)[held], np.asarray(codes)[~held]))
        return held

    monkeypatch.setattr(groups, "stratified_holdout", spy)
    fits: list[tuple[bytes, int]] = []  # every svm or mlp word head's training words (their vectors) and seed
    real_fit = word_eval.fit_word_head

    def fit_word_head(name, X, y, train, dev, *args):
        fits.append((np.ascontiguousarray(X[train]).tobytes(), args[-2]))
        return real_fit(name, X, y, train, dev, *args)

    monkeypatch.setattr(word_eval, "fit_word_head", fit_word_head)
    features, _ = word_features
    fitted = featx.fit(features, label="upos", layer="1", pooling="mean", folds=3, classifier=classifier, write=False)
    final = drawn[-2]  # the final head's holdout, drawn on every training word (the last: the control task's)
    drawn.clear()
    probed = featx.probe(
        features, label="upos", layers="1", poolings="mean", classifiers=classifier, control=False, write=False, jobs=1
    )
    assert len(drawn) == 1 and all(np.array_equal(a, b) for a, b in zip(drawn[0], final, strict=True))
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    if classifier == "mlp":
        assert np.isnan(float(row["C"])) and np.isnan(fitted.probe.head.C)
    else:  # the same C, chosen on the same holdout
        assert float(row["C"]) == pytest.approx(fitted.probe.head.C)
    assert fitted.test["score"] == pytest.approx(float(row["accuracy"]), abs=1e-9)
    X, test, _ = _stored(features, 1, "mean")  # every word here is labelled: the probe's items in stored order
    assert list(probed.predictions["layer_1"]) == list(fitted.probe.predict_features(X[test]))
    if classifier != "logreg":  # fit's 3 folds, final head and control head, then the probe's one fold: one function
        assert len(fits) == 3 + 1 + 1 + 1 and fits[-1] == fits[-2] == fits[-3] and fits[-1][0] == X[~test].tobytes()


def test_new_sentences_get_the_stored_word_vectors(fitted, word_features):
    features, test_file = word_features
    probe = featx.load(fitted.path)
    with featx.open(features) as file:
        offsets, forms = file.word_offsets(), file.word_forms()
        X, test, _ = _stored(features, probe.spec.layers[0], probe.pooling)
        sentences = [forms[offsets[s] : offsets[s + 1]] for s in range(file.n_rows)]
    computed, word_offsets = probe.word_features(sentences)
    assert np.array_equal(word_offsets, offsets)
    np.testing.assert_allclose(computed, X, rtol=1e-5, atol=1e-5)
    predicted = probe.predict([" ".join(sentences[0]), sentences[1]])
    assert [len(tags) for tags in predicted] == [len(sentences[0]), len(sentences[1])]
    assert list(predicted[1]) == list(probe.predict_features(computed[offsets[1] : offsets[2]]))
    proba = probe.predict_proba([sentences[2]])
    assert proba[0].shape == (len(sentences[2]), 4) and np.allclose(proba[0].sum(axis=1), 1.0)


def test_predict_on_the_test_treebank_scores_what_fit_reported(fitted, word_features, tmp_path):
    _, test_file = word_features
    output = tmp_path / "p.csv"
    args = ["predict", str(fitted.path), str(test_file), "-o", str(output), "--label", "upos", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"accuracy {fitted.test['score']:.4f} on {fitted.test['n']} labelled words" in result.output
    table = pd.read_csv(output)
    assert list(table.columns[:4]) == ["id", "word", "form", "prediction"] and len(table) == fitted.test["n"]
    first = table[table.id == "te0"]
    assert list(first.word) == list(range(1, len(first) + 1))
    assert f"wrote {fitted.test['n']} word predictions" in result.output
    piped = CliRunner().invoke(main, [*args[:3], "-o", "-", "-q"])
    assert piped.exit_code == 0 and piped.stdout == output.read_text() and "word predictions" in piped.stderr


def test_predict_splits_plain_texts_on_whitespace(fitted, tmp_path):
    corpus = write_csv(tmp_path / "new.csv", [("the cat sat",), ("a dog",)], header=("text",))
    result = CliRunner().invoke(main, ["predict", str(fitted.path), str(corpus), "-o", str(tmp_path / "p.tsv"), "-q"])
    assert result.exit_code == 0, result.output
    assert "each text split on whitespace" in result.output
    table = pd.read_csv(tmp_path / "p.tsv", sep="\t")
    assert list(table.form) == ["the", "cat", "sat", "a", "dog"] and list(table.id) == [0, 0, 0, 1, 1]
    expected = featx.load(fitted.path).predict([["the", "cat", "sat"], ["a", "dog"]])
    assert list(table.prediction) == [*expected[0], *expected[1]]


def test_an_interrupted_word_run_resumes_on_a_sentence(fitted, word_features, tmp_path, monkeypatch):
    _, test_file = word_features
    output = tmp_path / "p.csv"
    args = ["predict", str(fitted.path), str(test_file), "-o", str(output), "--commit-rows", "5", "-q"]
    real, calls = Probe.word_features, []

    def failing(probe, sentences, **overrides):
        calls.append(len(sentences))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(probe, sentences, **overrides)

    monkeypatch.setattr(Probe, "word_features", failing)
    assert CliRunner().invoke(main, args).exit_code == 130 and not output.exists()
    monkeypatch.setattr(Probe, "word_features", real)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    with featx.open(word_features[0]) as file:
        done = int(file.word_offsets()[40 + 10] - file.word_offsets()[40])  # the test file's first 10 sentences
    assert f"resumed: {done} of {fitted.test['n']} words were already predicted" in result.output
    whole = tmp_path / "whole.csv"
    assert CliRunner().invoke(main, [*args[:3], "-o", str(whole), "-q"]).exit_code == 0
    pd.testing.assert_frame_equal(pd.read_csv(output), pd.read_csv(whole))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"layer": "cat(0,1)"}, "a word probe reads one layer at a time"),
        ({"classifier": "ridge"}, "featx fit learns word labels as classes"),
        ({"task": "regression"}, "featx fit learns word labels as classes"),
        ({"pooling": "cls"}, "pooling 'cls' is not available: choose from first, last, mean"),
    ],
)
def test_word_fits_refuse_what_they_cannot_do(word_features, options, message):
    with pytest.raises(InputError, match=message):
        featx.fit(word_features[0], label="upos", write=False, **options)


@pytest.mark.parametrize(
    "label, message",
    [
        ("head", "'head' is the dependency arcs of a word input, fitted as a head selector with arcs=True"),
        ("upso", "has no label column 'upso'; label columns: \\(none\\); word label columns: upos, xpos, deprel"),
    ],
)
def test_a_label_the_word_input_lacks_names_what_it_has(word_features, label, message):
    with pytest.raises(InputError, match=message):
        featx.fit(word_features[0], label=label, write=False)


def test_predict_refuses_word_options_it_cannot_use(fitted, word_features, tmp_path, sentence_bundle):
    test_file = word_features[1]
    corpus = write_csv(tmp_path / "c.csv", [("the cat", "x")], header=("text", "other"))
    cases = [
        ([str(fitted.path), str(corpus), "--text-pair-col", "other"], "a word probe reads one sentence per row"),
        ([str(fitted.path), str(corpus), "--label", "other"], "no word label column 'other'"),
        ([str(fitted.path), "-", "--word-format", "conllu"], "conllu input is read from a file, not stdin"),
        ([str(sentence_bundle), str(corpus), "--word-format", "conllu"], "apply to word probes"),
        # a treebank given to a sentence bundle: its hint said to pass --word-format (refused) or name it .conllu
        ([str(sentence_bundle), str(test_file)], r"is a conllu file of words, .* predicts a label per text.* a table"),
        ([str(fitted.path), str(test_file), "--id-col", "sent"], "this is conllu input: its sentences are named"),
        ([str(fitted.path), str(test_file), "--row-ids"], "--row-ids numbers the rows of a table of texts; this is co"),
        ([str(fitted.path), str(test_file), "--text-col", "text"], "this is conllu input: its words are the file's"),
    ]
    treebank = test_file.read_text()
    cases.append(([str(sentence_bundle), "-"], r"treebank.* predicts a label per text: give a table of texts"))
    for args, message in cases:
        given = treebank if args[1:] == ["-"] and args[0] == str(sentence_bundle) else "text\na\n"
        result = CliRunner().invoke(main, ["predict", *args, "-o", str(tmp_path / "p.csv"), "-q"], input=given)
        assert result.exit_code == 2, result.output
        assert_one_clear_error(result.output, message)
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize(
    "sentences, message",
    [
        (["fine", []], r"sentences\[1\] has no words"),
        ([["a", " "]], r"sentences\[0\] has an empty word"),
        ([["a", 3]], r"sentences\[0\] is a list, not a list of words"),
        ("the cat", "is a str, not a list of sentences"),
    ],
)
def test_sentences_in_python_are_checked_before_the_model_runs(fitted, sentences, message):
    with pytest.raises(InputError, match=message):
        featx.load(fitted.path).predict(sentences)


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"pooling": "cls"}, "unknown word pooling 'cls'"),
        ({"level": "phrase"}, "unknown level 'phrase'"),
        ({"layer_spec": {"kind": "cat", "layers": [0, 1], "name": "cat(0,1)"}}, "reads one layer"),
    ],
)
def test_a_hostile_word_manifest_is_refused(fitted, tmp_path, edit, message):
    bundle = tmp_path / "b.featx"
    shutil.copytree(fitted.path, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    (bundle / "manifest.json").write_text(json.dumps({**manifest, **edit}))
    with pytest.raises(InputError, match=message):
        featx.load(bundle)


def test_the_scikit_learn_wrapper_takes_word_vectors_not_texts(fitted, word_features):
    from featx.sklearn import FittedProbe

    estimator = FittedProbe(fitted.path)
    with pytest.raises(ValueError, match="word probe: FittedProbe takes its word vectors"):
        estimator.predict(["the cat"])
    probe = featx.load(fitted.path)
    X, test, _ = _stored(word_features[0], probe.spec.layers[0], probe.pooling)
    assert list(estimator.predict(X[test])) == list(probe.predict_features(X[test]))


def test_word_candidates_of_the_same_vectors_are_scored_once(word_features, monkeypatch, tmp_path):
    """Every toy word is one token, so a layer's first, last and mean read the same vectors: each layer is
    scored once, and the choice and every candidate's scores are those of scoring all nine. Each word matrix is
    read once before the first fit, as stored (its finiteness checked on that read, no scan besides), then once per
    candidate scored and once for the saved head. A float16 file's vectors are compared as stored too."""
    from collections import Counter

    import h5py

    from featx.deploy import choose as choose_module
    from featx.deploy import features as features_module
    from featx.deploy import fitting as fitting_module
    from featx.store import FeatureFile

    features, _ = word_features
    checked_candidates = features_module.checked_candidates
    scored, original = [], choose_module.score_candidate
    monkeypatch.setattr(choose_module, "score_candidate", lambda *job: scored.append(job[1:3]) or original(*job))
    reads, scans, read, scan = [], [], FeatureFile.word_features, FeatureFile.require_finite
    monkeypatch.setattr(FeatureFile, "word_features", lambda self, *key: reads.append(key) or read(self, *key))
    monkeypatch.setattr(FeatureFile, "require_finite", lambda self, wanted: scans.append(wanted) or scan(self, wanted))
    once = featx.fit(features, label="upos", folds=2, write=False, jobs=1)
    assert [(spec.name, pooling) for spec, pooling in scored] == [("0", "first"), ("1", "first"), ("2", "first")]
    every_matrix = Counter((pooling, layer) for layer in range(3) for pooling in ("first", "last", "mean"))
    assert Counter(key[:2] for key in reads) == every_matrix + Counter(
        [("first", 0), ("first", 1), ("first", 2), (once.probe.pooling, once.probe.spec.layers[0])]
    )
    assert [key[2] for key in reads if len(key) == 3] == [np.dtype(np.float32)] * 9 and not scans  # as stored
    monkeypatch.setattr(fitting_module, "checked_candidates", lambda path, candidates, level, compare: list(range(9)))
    every = featx.fit(features, label="upos", folds=2, write=False, jobs=1)
    assert len(scored) == 3 + 9
    assert [(c.spec.name, c.pooling, c.fold_scores) for c in once.candidates] == [
        (c.spec.name, c.pooling, c.fold_scores) for c in every.candidates
    ]
    candidates = [(spec, pooling) for spec, pooling in scored[:2]]
    assert checked_candidates(features, candidates * 2, "word") == [0, 1, 0, 1]  # every word one token
    assert checked_candidates(features, candidates * 2, "word", compare=False) == [0, 1, 2, 3]  # never compared
    half = shutil.copy(features, tmp_path / "half.h5")
    with h5py.File(half, "r+") as file:  # every feature as float16, as featx extract stores them by default
        names = [f"pooled/{name}" for name in file["pooled"]]
        for name in names + [f"words/pooled/{name}" for name in file["words/pooled"]]:
            values = file[name][()].astype(np.float16)
            del file[name]
            file.create_dataset(name, data=values)
        file.attrs["store_dtype"] = "float16"
    reads.clear()
    assert checked_candidates(half, candidates * 2 + [(candidates[0][0], "mean")], "word") == [0, 1, 0, 1, 0]
    assert {key[2] for key in reads} == {np.dtype(np.float16)}
    reads.clear()
    monkeypatch.setattr(featx.store.FeatureFile, "word_n_subwords", lambda self: np.full(293, 2))
    assert checked_candidates(features, candidates * 2, "word") == [0, 1, 2, 3]  # scanned, not read nor compared
    assert not reads and len(scans) == 2
