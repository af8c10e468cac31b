"""Word-level probing (probe side): tasks and folds by sentence, the word-type control task, the
lexical baseline, arc features, sentence-level intervals and tests, scalar mix, and whole runs on planted
data (in memory and through a real features file)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from support.planted_words import TAGS, PlantedWords

from featx.errors import InputError
from featx.probing import evaluation as ev
from featx.probing.config import ProbeConfig
from featx.probing.evaluation.significance import paired_sign_flip
from featx.probing.tasks.word_eval import item_features
from featx.probing.tasks.word_items import (
    attachment_task,
    control_labels,
    items_in_split,
    lexical_predictions,
    relation_task,
    sentence_plan,
    word_task,
)
from featx.probing.tasks.words import probe_words
from featx.report import format_probe
from featx.store import HEAD_UNKNOWN


def _task(source, kind):
    return {
        "word": lambda: word_task(source, "upos"),
        "deprel": lambda: relation_task(source, "deprel"),
        "head": lambda: attachment_task(source, 0),
    }[kind]()


def _run(source, **options):
    config = ProbeConfig(features="planted", write=False, jobs=1, n_bootstrap=200, **options)
    return probe_words(config, "planted", [], time.perf_counter(), source=source)


# -- folds by sentence ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["word", "deprel", "head"])
@pytest.mark.parametrize("split", [True, False])
def test_folds_and_inner_holdouts_never_split_a_sentence(kind, split):
    source = PlantedWords(n_sentences=60, split=split)
    task = _task(source, kind)
    plan = sentence_plan(task, source.split, 4, 0, [])
    assert plan.evaluation == ("split" if split else "4-fold cv")
    covered = np.zeros(len(task.y), int)
    for train, test in plan.folds:
        assert not set(task.groups[train]) & set(task.groups[test])
        fit, val = ev.inner_split(task.y, train, 3, task.groups)
        assert not set(task.groups[fit]) & set(task.groups[val]) and len(val) and len(fit)
        assert sorted(np.concatenate([fit, val])) == sorted(train)
        covered[test] += 1
    if not split:  # every item is tested exactly once under cross-validation
        assert np.all(covered == 1)
    else:  # the split column decides, sentence by sentence
        test_sentences = set(np.flatnonzero(source.split == "test"))
        assert set(task.groups[plan.folds[0][1]]) == test_sentences


def test_a_split_without_train_trains_on_dev():
    source = PlantedWords(n_sentences=40)
    source.split = np.where(source.split == "train", "dev", source.split)
    notes = []
    plan = sentence_plan(word_task(source, "upos"), source.split, 5, 0, notes)
    assert plan.is_split and plan.dev[0] is None and "dev part" in notes[0]


def test_a_label_rarer_than_the_folds_is_noted_not_warned_about(recwarn):
    source = PlantedWords(n_sentences=40)
    task = word_task(source, "upos")
    rare = task.y[0]
    task.y = np.where(task.y == rare, (rare + 1) % task.n_classes, task.y)
    task.y[[0, 5]] = rare  # two items of the rare label, for 5 folds
    notes = []
    sentence_plan(task, None, 5, 0, notes)
    assert not [w for w in recwarn if "least populated class" in str(w.message)]
    assert notes == [
        "label(s) with fewer items than the 5 folds, so missing from some folds' test parts: "
        f"{task.class_names[rare]} (2)"
    ]


def test_an_svm_or_mlp_word_head_is_scaled_on_its_whole_training_part():
    """``fit_word_head`` (featx probe's word probes and featx fit's word heads): without val words, the holdout that
    chooses the svm's C or stops the mlp takes whole sentences, the scaler is fitted on every training item, and
    the svm is refitted on all of them at that C. The probe held the sentences out before the scaler and kept the
    svm fitted on the rest."""
    from featx.probing import fit_word_head
    from featx.probing.solvers import classifiers as clf
    from featx.probing.tasks.word_eval import word_head_predictions

    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(40), 5)
    y = rng.integers(0, 3, size=len(groups))
    X = (rng.standard_normal((len(groups), 8)) + y[:, None]).astype(np.float32)
    train = np.arange(150)  # the last 10 sentences are the test part
    for name in ("svm", "mlp"):
        model, scaler, C, (held, _) = fit_word_head(name, X, y, train, None, 3, (0.01, 1.0), False, 0, groups)
        np.testing.assert_allclose(scaler.mean, X[train].mean(axis=0), rtol=1e-5, atol=1e-6)
        assert len(held) and set(held) <= set(train) and not set(groups[held]) & set(groups[np.setdiff1d(train, held)])
        assert len(word_head_predictions(model, scaler, X, np.arange(150, 200))) == 50
        if name == "svm":
            whole = clf.fit_quietly(clf.make_linear("svm", C, False, 0), scaler(X[train]), y[train])
            np.testing.assert_allclose(model.coef_, whole.coef_, atol=1e-3)  # warm-started from the path's fit
        else:
            assert np.isnan(C)
    with pytest.raises(ValueError, match="svm and mlp"):
        fit_word_head("logreg", X, y, train, None, 3, (1.0,), False, 0, groups)


def test_sentences_of_another_split_value_are_left_out_of_the_items():
    """As featx fit leaves their words out: no fold, holdout or test part sees them; one note names them."""
    source = PlantedWords(n_sentences=40)
    split = np.asarray(source.split, dtype=object).copy()
    split[::5] = "holdout"
    source.split = split
    task = word_task(source, "upos")
    notes: list[str] = []
    kept = items_in_split(task, split, notes, "planted")
    left = np.isin(task.groups, np.flatnonzero(split == "holdout"))
    assert np.array_equal(kept.groups, task.groups[~left]) and np.array_equal(kept.words, task.words[~left])
    assert notes == [
        f"{int(left.sum())} words with split 'holdout' left out: split values other than train, val (dev, "
        "validation, valid) and test are not used"
    ]
    arcs: list[str] = []
    items_in_split(relation_task(source, "deprel"), split, arcs, "planted")
    assert arcs[0].split(" ", 1)[1].startswith("word pairs with split 'holdout' left out")
    result = _run(source, label="upos", layers="1", poolings="mean")
    assert notes[0] in result.notes and result.meta["n_sentences"] == int((split != "holdout").sum())
    unused: list[str] = []  # no usable value (treebank files named by their stems): every word kept, CV
    assert items_in_split(task, np.full(len(split), "other", dtype=object), unused, "planted") is task
    assert (
        unused[0].startswith("no word of planted has a split value featx uses") and "the split is not used" in unused[0]
    )


# -- control task and lexical baseline -------------------------------------------------------------------
def test_word_type_control_gives_each_type_one_label():
    source = PlantedWords(n_sentences=80, n_types=30)
    task = word_task(source, "upos")
    control = control_labels(task, np.arange(len(task.y)), seed=5)
    types = np.array([form.lower() for form in source.forms])
    for word_type in np.unique(types):  # "W3" and "w3" are one type
        assert len(set(control[types == word_type])) == 1
    assert len(set(control)) > 1  # drawn from the label distribution, not one constant
    np.testing.assert_array_equal(control, control_labels(task, np.arange(len(task.y)), seed=5))
    assert not np.array_equal(control, control_labels(task, np.arange(len(task.y)), seed=6))


def test_lexical_baseline_is_fitted_on_the_training_part_only():
    source = PlantedWords(n_sentences=60, n_types=25)
    task = word_task(source, "upos")
    plan = sentence_plan(task, source.split, 5, 0, [])
    train, test = plan.folds[0]
    before = lexical_predictions(task, train, test)
    task.y = task.y.copy()
    task.y[test] = (task.y[test] + 1) % len(TAGS)  # the test labels change: the predictions do not
    np.testing.assert_array_equal(before, lexical_predictions(task, train, test))
    seen = set(task.keys[train])
    majority = np.argmax(np.bincount(task.y[train], minlength=task.n_classes))
    for key, predicted in zip(task.keys[test], before, strict=False):
        if key in seen:
            counts = np.bincount(task.y[train][task.keys[train] == key], minlength=task.n_classes)
            assert predicted == np.argmax(counts)
        else:
            assert predicted == majority


# -- arcs ---------------------------------------------------------------------------------------------------
def test_arc_items_and_features_come_from_the_right_pair():
    source = PlantedWords(n_sentences=5)
    task = relation_task(source, "deprel")
    # Hand check: word 1 of sentence 2 and its head, as global word indices.
    start = int(source.offsets[2])
    dependent = start + 1 if source.heads[start + 1] >= 0 else start + 2
    head = start + int(source.heads[dependent])
    row = int(np.flatnonzero(task.words[:, 1] == dependent)[0])
    assert tuple(task.words[row]) == (head, dependent) and task.groups[row] == 2
    assert task.class_names[task.y[row]] == ["nsubj", "obj", "det", "amod", "root"][source.deprel[dependent]]
    states = np.arange(len(source.forms) * 2, dtype=np.float32).reshape(-1, 2)
    X = item_features(task, states)
    np.testing.assert_array_equal(X[row], [*states[head], *states[dependent], *(states[head] * states[dependent])])
    assert len(task.y) == int(np.sum(source.heads >= 0))  # every non-root word once


def test_attachment_pairs_are_each_words_gold_head_and_one_other_candidate():
    """Every word of a sentence with a tree gives its gold pair (a root word paired with itself: the root) and one
    other candidate of its sentence (another word, or itself when it is not the root), never its gold head."""
    source = PlantedWords(n_sentences=50)
    task = attachment_task(source, seed=1)
    starts = source.offsets[source.sentence]
    gold = {(int(starts[d] + source.heads[d]) if source.heads[d] >= 0 else int(d), int(d)) for d in range(len(starts))}
    positives, negatives = task.words[task.y == 1], task.words[task.y == 0]
    assert {(int(h), int(d)) for h, d in positives} == gold  # every word once, the roots as self-pairs
    assert len(negatives) == len(gold) and all((int(h), int(d)) not in gold for h, d in negatives)
    assert np.all(source.sentence[negatives[:, 0]] == source.sentence[negatives[:, 1]])
    assert np.any(negatives[:, 0] == negatives[:, 1])  # "this word is the root" is a candidate of a non-root word
    np.testing.assert_array_equal(task.words, attachment_task(source, seed=1).words)


@pytest.mark.parametrize("kind", ["deprel", "head"])
def test_words_with_unknown_heads_are_no_arc_items_and_a_note_counts_them(kind):
    """A word whose head is unknown is no dependent of a relation item and has no gold pair (never the root's)."""
    source = PlantedWords(n_sentences=20)
    unknown = np.flatnonzero(source.heads >= 0)[:3]
    source.heads[unknown] = HEAD_UNKNOWN
    notes: list[str] = []
    if kind == "head":
        task = attachment_task(source, 0, notes)
        gold = task.words[task.y == 1]
        assert len(gold) == len(source.heads) - 3  # every other word once, the roots as self-pairs
    else:
        task = relation_task(source, "deprel", notes)
        gold = task.words
        assert len(gold) == int(np.sum(source.heads >= 0))
    assert not set(unknown.tolist()) & set(gold[:, 1].tolist())
    assert any(note.startswith("3 word(s) with an unknown head") for note in notes), notes


# -- intervals and tests over sentences -----------------------------------------------------------------------
def test_sentence_bootstrap_is_wider_than_a_word_bootstrap_when_errors_cluster():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(60), 10)
    y = rng.integers(0, 3, size=len(groups))
    wrong_sentences = rng.random(60) < 0.3  # whole sentences right or wrong
    pred = np.where(wrong_sentences[groups], (y + 1) % 3, y)
    clustered = ev.bootstrap_intervals(y, pred, 3, 500, 0, groups)
    independent = ev.bootstrap_intervals(y, pred, 3, 500, 0, np.arange(len(y)))
    by_rows = ev.bootstrap_intervals(y, pred, 3, 500, 0)
    assert independent["accuracy"] == pytest.approx(by_rows["accuracy"], abs=0.02)  # one-word groups: rows
    accuracy = np.mean(pred == y)
    assert clustered["accuracy"][0] <= accuracy <= clustered["accuracy"][1]
    width = lambda bounds: bounds["accuracy"][1] - bounds["accuracy"][0]  # noqa: E731
    assert width(clustered) > 2 * width(independent)


def test_paired_test_resamples_sentences():
    groups = np.repeat(np.arange(40), 5)
    a = np.ones(200, bool)
    assert paired_sign_flip(a, a, 500, 0, groups) == 1.0
    b = a.copy()
    b[:10] = False  # two sentences differ: 10 words, but only two units when sentences are the unit
    assert paired_sign_flip(a, b, 500, 0, groups) == 0.5  # 2 of the 4 sign patterns as extreme
    assert paired_sign_flip(a, b, 500, 0, None) < 0.01  # words as independent rows would call it significant


# -- whole runs on planted data ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_planted_layer_wins_and_noise_layers_stay_near_majority():
    result = _run(PlantedWords(signal={2: 3.0}), label="upos", poolings="mean")
    table, meta = result.table, result.meta
    singles = table[table.kind == "single"].set_index("layer")
    majority = float(table[table.kind == "majority"].accuracy.iloc[0])
    assert singles.accuracy.idxmax() == 2 and singles.loc[2, "is_best"]
    assert singles.loc[2, "accuracy"] > majority + 0.4 and singles.loc[2, "selectivity"] > 0.3
    for layer in (0, 1, 3):
        assert abs(singles.loc[layer, "accuracy"] - majority) < 0.06
    assert set(table.level) == {"word"} and {"majority", "lexical"} <= set(table.kind)
    assert bool(singles.loc[0, "significant_vs_best"]) and singles.loc[2, "n_test"] == np.sum(
        np.isin(PlantedWords().sentence, np.flatnonzero(PlantedWords().split == "test"))
    )
    summary = meta["layer_summary"]["mean"]
    assert int(np.argmax(summary["weights"])) == 2 and abs(summary["center_of_gravity"] - 2) < 0.5
    assert 1.5 < summary["expected_layer"] < 2.5
    assert summary["scored_on"] == "the test split"  # without one: the first fold's test part only, and said so
    text = format_probe(result)
    assert "center of gravity" in text and "most frequent label per word type" in text and "sentences" in text


@pytest.mark.slow
def test_scalar_mix_peaks_at_the_planted_layer_for_arcs():
    source = PlantedWords(n_sentences=150, signal={1: 3.0}, arc_signal=1, hidden=12)
    result = _run(source, label="deprel", arcs=True, poolings="first")
    singles = result.table[result.table.kind == "single"].set_index("layer")
    assert singles.accuracy.idxmax() == 1 and set(result.table.level) == {"arc"}
    summary = result.meta["layer_summary"]["first"]
    assert int(np.argmax(summary["weights"])) == 1


def test_head_arcs_cross_validated_with_svm():
    result = _run(
        PlantedWords(n_sentences=40, split=False),
        label="head",
        arcs=True,
        poolings="last",
        layers="0,1",
        classifiers="svm",
        folds=3,
    )
    singles = result.table[result.table.kind == "single"]
    assert result.meta["evaluation"] == "3-fold cv" and list(singles.classifier) == ["svm", "svm"]
    assert result.meta["class_counts"]["arc"] > 0 and np.isfinite(singles.C).all()
    # the control task of a head probe keys its labels by the pair of word types, as its baseline does
    assert "control = same probe on the type-pair control task" in format_probe(result)
    assert "word-type control" not in format_probe(result)


@pytest.mark.slow
def test_mdl_sends_whole_sentences_and_ranks_the_planted_layer_first():
    source = PlantedWords(n_sentences=120, signal={2: 3.0})  # 120, not 150: the control task's code costs the rest
    result = _run(source, label="upos", poolings="mean", mdl=True)
    singles = result.table[result.table.kind == "single"].set_index("layer")
    assert result.meta["mdl"] and singles.mdl_bits.notna().all()
    assert singles.mdl_compression.idxmax() == 2 and singles.loc[2, "mdl_compression"] > 1.5
    assert all(0.8 < singles.loc[layer, "mdl_compression"] < 1.15 for layer in (0, 1, 3))
    # the word-type control task's code, sent in the same blocks, does not compress where the real labels do
    assert (singles.control_mdl_compression < 1.15).all() and singles.mdl_selectivity.idxmax() == 2
    assert singles.loc[2, "mdl_selectivity"] == pytest.approx(
        singles.loc[2, "control_mdl_bits"] - singles.loc[2, "mdl_bits"]
    )
    # the training part only: its words, and the uniform code of exactly those
    training = np.isin(source.sentence, np.flatnonzero(source.split == "train"))
    uniform = singles.loc[2, "mdl_bits"] * singles.loc[2, "mdl_compression"]
    assert uniform == pytest.approx(training.sum() * np.log2(len(TAGS)))
    assert "sent sentence by sentence" in format_probe(result)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(label="upos", classifiers="attn"), "not available for word-level"),
        (dict(label="upos", layers="cat(0,1)"), "single layers"),
        (dict(label="ner"), "no word label column 'ner'"),
        (dict(label="upos", labels="labels.csv"), "--labels is not available for word-level"),
    ],
)
def test_word_probe_bad_options(options, message):
    with pytest.raises(InputError, match=message):
        _run(PlantedWords(n_sentences=20), **options)


def test_a_one_class_word_label_names_its_file():
    """The refusal names the features file (its path), where it said 'of the features file'."""
    source = PlantedWords(n_sentences=20)
    one = SimpleNamespace(
        path="gum.h5",
        n_rows=source.n_rows,
        word_label_columns=source.word_label_columns,
        word_labels=lambda label: np.zeros_like(np.asarray(source.word_labels(label))),
        word_label_names=source.word_label_names,
        word_sentence=source.word_sentence,
        word_forms=source.word_forms,
    )
    with pytest.raises(InputError, match=r"label column 'upos' of gum\.h5 has only one class \('"):
        word_task(one, "upos")


# -- through a real features file ----------------------------------------------------------------------------------
class _Corpus:
    """The least ``FeatureWriter.create`` needs of a corpus of words and its tokenisation (duck-typed)."""

    def __init__(self, source: PlantedWords):
        label = lambda codes, names: SimpleNamespace(codes=np.asarray(codes, np.int32), names=names)  # noqa: E731
        n_rows = source.n_rows
        self.texts, self.ids = [f"sentence {i}" for i in range(n_rows)], [f"s{i}" for i in range(n_rows)]
        self.split, self.labels = list(source.split), {}
        self.words = SimpleNamespace(
            offsets=source.offsets,
            forms=source.forms,
            heads=source.heads,
            labels={
                "upos": label(source.upos, TAGS),
                "deprel": label(source.deprel, source.word_label_names("deprel")),
            },
        )
        self.n_subwords = np.ones(len(source.forms), np.int32)
        lengths = (np.diff(source.offsets) + 2).astype(np.int32)
        self.offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        self.full_lengths = self.lengths = lengths
        self.input_ids, self.word_ids = np.zeros(int(lengths.sum()), np.int32), None
        self.truncated = np.zeros(n_rows, bool)

    def __len__(self):
        return len(self.texts)


def _write_planted_file(path, source: PlantedWords) -> None:
    """A real features file holding the planted word vectors (word poolings first and mean)."""
    from featx.store import FeatureWriter, hidden_layout, schema

    corpus, n_rows, hidden = _Corpus(source), source.n_rows, source.states["mean"].shape[2]
    writer = FeatureWriter.create(
        path,
        {schema.FINGERPRINT: "fp", schema.MODEL: "planted"},
        corpus,
        corpus,
        [hidden_layout(source.layers, hidden, ["mean"])],
        np.float32,
        False,
        word_poolings=("first", "mean"),
    )
    values = {"pooled/mean": np.zeros((n_rows, len(source.layers), hidden), np.float32)}
    values.update({f"words/pooled/{p}": source.states[p] for p in ("first", "mean")})
    writer.write_block(0, n_rows, values)
    writer.commit(n_rows)
    writer.finish()


@pytest.mark.slow
def test_probe_and_plot_through_a_real_file(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from featx.cli import main
    from featx.probing import load_results

    source = PlantedWords(n_sentences=80, signal={1: 3.0})
    path = tmp_path / "planted.h5"
    _write_planted_file(path, source)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    out = runner.invoke(main, ["probe", str(path), "--label", "upos", "--layer", "all", "--jobs", "1"])
    assert out.exit_code == 0, out.output
    assert "word-level label 'upos'" in out.output and "center of gravity" in out.output
    table, meta = load_results(tmp_path / "planted.upos.probe.csv")
    singles = table[table.kind == "single"]
    assert set(singles.pooling) == {"first", "mean"} and meta["level"] == "word"
    assert int(singles.loc[singles.accuracy.idxmax(), "layer"]) == 1
    assert json.loads((tmp_path / "planted.upos.probe.json").read_text())["meta"]["layer_summary"]["mean"]["weights"]
    out = runner.invoke(main, ["plot", str(tmp_path / "planted.upos.probe.csv")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "planted.upos.probe.png").stat().st_size > 10_000
    svg = (tmp_path / "planted.upos.probe.svg").read_text()
    assert "center of gravity" in svg and "most frequent label per word type" in svg and "scalar mix" in svg
    out = runner.invoke(main, ["explain", str(tmp_path / "planted.upos.probe.csv"), "--limit", "3"])
    assert out.exit_code == 0, out.output
    assert (
        "most frequent confusions at layer 1 (chosen on the training part)" in out.output
        and "per-class F1 by layer" in out.output
    )
    predictions = pd.read_csv(tmp_path / "planted.upos.predictions.csv")
    test_words = np.flatnonzero(source.split[source.sentence] == "test")
    assert len(predictions) == len(test_words) and list(predictions.word) == [source.forms[w] for w in test_words]
    assert list(predictions.label) == [TAGS[source.upos[w]] for w in test_words]
    out = runner.invoke(main, ["probe", str(path), "--label", "head"])
    assert out.exit_code == 2 and "--arcs" in out.output
    out = runner.invoke(
        main,
        [
            "probe",
            str(path),
            "--label",
            "deprel",
            "--arcs",
            "--layer",
            "0,1",
            "--pooling",
            "mean",
            "--jobs",
            "1",
            "--no-control",
        ],
    )
    assert out.exit_code == 0, out.output
    assert (tmp_path / "planted.deprel.arcs.probe.csv").exists()


def test_a_label_seen_only_in_the_test_part_is_kept_and_named():
    source = PlantedWords(n_sentences=40)
    test_word = int(np.flatnonzero(source.split[source.sentence] == "test")[0])
    source.upos = source.upos.copy()
    source.upos[test_word] = len(TAGS)  # a fifth tag, on one test word only
    source.word_label_names = lambda column: (
        list(TAGS) + ["X"] if column == "upos" else ["nsubj", "obj", "det", "amod", "root"]
    )
    notes = []
    task = word_task(source, "upos")
    plan = sentence_plan(task, source.split, 5, 0, notes)
    assert plan.is_split and "X (1)" in notes[0] and task.n_classes == len(TAGS) + 1


def test_which_labels_are_probed_as_words():
    from featx.probing.plan import wants_words

    words = PlantedWords(n_sentences=10)
    assert wants_words(words, ProbeConfig(label="upos")) and wants_words(words, ProbeConfig())
    with pytest.raises(InputError, match="--arcs"):
        wants_words(words, ProbeConfig(label="head"))
    words.label_columns = ["upos"]  # a sentence-level column of that name is probed per sentence
    assert not wants_words(words, ProbeConfig(label="upos")) and not wants_words(words, ProbeConfig())
    sentences = SimpleNamespace(label_columns=["label"], path="x.h5", has_words=False)
    assert not wants_words(sentences, ProbeConfig(label="label"))
    with pytest.raises(InputError, match="--arcs needs word-level data"):
        wants_words(sentences, ProbeConfig(label="deprel", arcs=True))
    result = _run(PlantedWords(n_sentences=30, signal={1: 3.0}), layers="1", poolings="mean")
    assert result.meta["label"] == "upos" and "probing the word label 'upos'" in result.notes[0]


def test_learning_curves_subsample_whole_training_sentences():
    from featx.probing.analyses.word_curves import sentence_subsample

    source = PlantedWords(n_sentences=80, signal={1: 3.0})
    task = word_task(source, "upos")
    train = sentence_plan(task, source.split, 5, 0, []).folds[0][0]
    n_sentences = len(np.unique(task.groups[train]))
    half = sentence_subsample(task.groups, train, 0.5, 0)
    assert len(np.unique(task.groups[half])) == round(0.5 * n_sentences)
    for sentence in np.unique(task.groups[half]):  # whole sentences: every training word of each kept one
        assert np.sum(task.groups[half] == sentence) == np.sum(task.groups[train] == sentence)
    assert 100 <= len(sentence_subsample(task.groups, train, 100, 0)) < 120
    result = _run(source, poolings="mean", layers="0,1", train_sizes="0.2,1.0")
    curve = result.curve.sort_values(["layer", "train_size"])
    assert list(curve.train_size) == [0.2, 1.0, 0.2, 1.0] and curve.n_train.iloc[0] < curve.n_train.iloc[1]
    full = curve[(curve.layer == 1) & (curve.train_size == 1.0)].accuracy.iloc[0]
    assert full == pytest.approx(result.table[(result.table.layer == 1)].accuracy.iloc[0])
    majority = result.table[result.table.layer_spec == "majority"].accuracy.iloc[0]  # fitted on the same items
    assert curve[curve.train_size == 1.0].baseline.tolist() == pytest.approx([majority, majority])


def test_the_smallest_curve_point_keeps_two_classes_in_two_sentences_each():
    """A rare label (in 8 of 60 sentences) is missing from a 2-sentence subsample: the subsample grows, in its
    seeded order, until two classes are each in two sentences (else an SVM's search over C stops the run)."""
    from featx.probing.analyses.word_curves import sentence_subsample

    groups = np.repeat(np.arange(60), 3)
    y = np.where(groups >= 52, 1, 0)
    rows = np.arange(len(groups))
    for seed in range(20):
        plain = sentence_subsample(groups, rows, 0.01, seed)
        grown = sentence_subsample(groups, rows, 0.01, seed, y)
        assert set(plain).issubset(grown) and len(np.unique(groups[plain])) == 2
        for label in (0, 1):
            assert len(np.unique(groups[grown][y[grown] == label])) >= 2
        shuffled = np.unique(groups)
        np.random.default_rng(seed).shuffle(shuffled)
        kept = len(np.unique(groups[grown]))
        assert set(np.unique(groups[grown])) == set(shuffled[:kept])  # a prefix of the same seeded order
        if kept > 2:  # the shortest such prefix: one sentence fewer leaves a class in one sentence at most
            fewer = np.isin(groups, shuffled[: kept - 1])
            assert min(len(np.unique(groups[fewer & (y == label)])) for label in (0, 1)) < 2
    assert any(len(np.unique(y[sentence_subsample(groups, rows, 0.01, seed)])) == 1 for seed in range(20))


# -- end to end: featx extract of a treebank, then probe, plot and explain ---------------------------------------
def _treebank(path, n_sentences: int, seed: int, prefix: str):
    from support.report_runs import treebank

    return treebank(path, n_sentences, seed, prefix)


@pytest.mark.slow
def test_extract_probe_plot_explain_a_treebank(tiny_model, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from featx.cli import main
    from featx.probing import load_results

    train = _treebank(tmp_path / "toy-ud-train.conllu", 50, 0, "tr")
    test = _treebank(tmp_path / "toy-ud-test.conllu", 20, 1, "te")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    out = runner.invoke(main, ["extract", str(train), str(test), "--model", str(tiny_model), "-o", "toy.h5", "-q"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(main, ["probe", "toy.h5", "--label", "upos", "--pooling", "first", "--jobs", "1"])
    assert out.exit_code == 0, out.output
    assert "changed since" not in out.output  # the digest covers both input files, as at extraction
    table, meta = load_results(tmp_path / "toy.upos.probe.csv")
    singles = table[table.kind == "single"]
    assert list(singles.layer) == [0, 1, 2] and meta["evaluation"] == "split" and set(table.level) == {"word"}
    majority = float(table[table.kind == "majority"].accuracy.iloc[0])
    assert (singles.accuracy > majority + 0.2).all()  # the tag is a function of the word, which every layer keeps
    predictions = pd.read_csv(tmp_path / "toy.upos.predictions.csv")
    assert predictions.id.str.startswith("te").all()  # only test sentences are scored
    assert len(predictions) == sum(1 for line in test.read_text().splitlines() if line[:1].isdigit())
    for label in ("deprel", "head"):
        out = runner.invoke(main, ["probe", "toy.h5", "--label", label, "--arcs", "--pooling", "mean", "--jobs", "1"])
        assert out.exit_code == 0, out.output
        arcs, _ = load_results(tmp_path / f"toy.{label}.arcs.probe.csv")
        assert set(arcs.level) == {"arc"} and arcs[arcs.kind == "single"].accuracy.notna().all()
    out = runner.invoke(main, ["plot", "toy.upos.probe.csv"])
    assert out.exit_code == 0 and (tmp_path / "toy.upos.probe.png").exists()
    out = runner.invoke(main, ["explain", "toy.deprel.arcs.probe.csv"])
    assert out.exit_code == 0 and "most frequent confusions" in out.output
    with open(test, "a") as handle:  # the second input file changes after extraction: said
        handle.write("# a late comment\n")
    out = runner.invoke(main, ["probe", "toy.h5", "--label", "upos", "--pooling", "first", "--jobs", "1"])
    assert out.exit_code == 0 and "changed since toy.h5 was extracted" in out.output
