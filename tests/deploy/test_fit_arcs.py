"""featx fit / predict --arcs: a relation labeller of gold arcs and a head selector, fitted on featx probe --arcs's own
items (fit and probe agree on them), never on a test sentence; the head selector's argmax and its baselines by hand;
predict on CoNLL-U, and its refusals; hostile arc manifests."""

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
from featx.deploy.attach import neighbour_baseline, offset_baseline
from featx.errors import InputError

FAST = {"folds": 3, "jobs": 1, "pooling": "mean"}


@pytest.fixture(scope="module")
def relation(word_features, tmp_path_factory):
    output = tmp_path_factory.mktemp("arcs") / "deprel.featx"
    return featx.fit(word_features[0], label="deprel", arcs=True, layer="0,1", output=output, **FAST)


@pytest.fixture(scope="module")
def selector(word_features, tmp_path_factory):
    output = tmp_path_factory.mktemp("arcs") / "head.featx"
    return featx.fit(word_features[0], label="head", arcs=True, layer="0,1", output=output, **FAST)


def _stored(features, layer: int):
    with featx.open(features) as file:
        test = np.asarray(file.split, dtype=str)[file.word_sentence()] == "test"
        return file.word_features("mean", layer), file.word_offsets(), file.word_heads(), test


@pytest.mark.parametrize("label", ["deprel", "head"])
def test_fit_and_probe_fit_the_same_head_on_the_same_arcs(word_features, label):
    """At one layer and pooling, featx fit's arc head and featx probe --arcs's probe are one fit: the same C, the same
    test accuracy of the same predictions (a head selector: of its pairs, beside the UAS only fit computes)."""
    features = word_features[0]
    fitted = featx.fit(features, label=label, arcs=True, layer="1", pooling="mean", folds=3, write=False, jobs=1)
    probed = featx.probe(
        features, label=label, arcs=True, layers="1", poolings="mean", control=False, write=False, jobs=1
    )
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert float(row["C"]) == pytest.approx(fitted.probe.head.C)
    score = fitted.test["pairs" if label == "head" else "score"]
    assert score == pytest.approx(float(row["accuracy"]), abs=1e-9)
    if label == "deprel":
        lexical = probed.table[probed.table["kind"] == "lexical"].iloc[0]
        assert fitted.test["lexical"] == pytest.approx(float(lexical["accuracy"]))
    assert fitted.chosen.spec.layers == (1,) and fitted.probe.arcs == ("head" if label == "head" else "relation")


@pytest.mark.parametrize("label", ["deprel", "head"])
def test_no_arc_fit_ever_sees_a_test_sentence(word_features, monkeypatch, label):
    features = word_features[0]
    seen: list[np.ndarray] = []
    real = heads.fit_head
    monkeypatch.setattr(heads, "fit_head", lambda c, X, *a, **k: seen.append(X) or real(c, X, *a, **k))
    featx.fit(features, label=label, arcs=True, layer="1", pooling="mean", folds=3, write=False, jobs=1)
    states, offsets, _, test = _stored(features, 1)
    tested = {row.tobytes() for row in states[test]}
    for X in seen:  # [h_head, h_dep, h_head * h_dep]: neither word of any fitted pair is a test word
        width = states.shape[1]
        assert not any(
            X[i, :width].tobytes() in tested or X[i, width : 2 * width].tobytes() in tested for i in range(len(X))
        )
    assert len(seen) == 3 + 1  # one head per fold, and the final head


def test_the_head_selector_takes_the_best_scoring_candidate_and_the_root(selector, word_features):
    probe = featx.load(selector.path)
    layer = probe.spec.layers[0]
    states, offsets, gold, test = _stored(word_features[0], layer)
    sentence = int(np.searchsorted(offsets, np.flatnonzero(test)[0], side="right") - 1)
    start, stop = int(offsets[sentence]), int(offsets[sentence + 1])
    words = states[start:stop]
    expected = []
    for dependent in range(stop - start):  # every candidate by hand; itself is the root
        X = np.stack(
            [np.concatenate([words[h], words[dependent], words[h] * words[dependent]]) for h in range(len(words))]
        )
        margins = probe.head.scores(X) @ np.array([-1.0, 1.0])
        best = int(np.argmax(margins))
        expected.append(0 if best == dependent else best + 1)
    with featx.open(word_features[0]) as file:
        forms = file.word_forms()[start:stop]
    assert list(probe.predict([forms])[0]) == expected
    right, total = 0, 0
    for s in np.unique(np.searchsorted(offsets, np.flatnonzero(test), side="right") - 1):
        X, n = states[offsets[s] : offsets[s + 1]], int(offsets[s + 1] - offsets[s])
        h, d = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)  # every (candidate, word) pair of the sentence
        margins = (probe.head.scores(np.hstack([X[h], X[d], X[h] * X[d]])) @ np.array([-1.0, 1.0])).reshape(n, n)
        truth = np.where(gold[offsets[s] : offsets[s + 1]] < 0, np.arange(n), gold[offsets[s] : offsets[s + 1]])
        right, total = right + int(np.sum(np.argmax(margins, axis=0) == truth)), total + n
    assert selector.test["n"] == total and selector.test["score"] == pytest.approx(right / total)


def test_the_baselines_are_fitted_on_the_training_words():
    offsets = np.array([0, 4, 7])
    train = (np.array([0, 1, 2, 3]), np.array([1, 2, 3, 3]))  # offsets +1, +1, +1 and the root (0)
    test = (np.array([4, 5, 6]), np.array([5, 5, 5]))
    assert list(offset_baseline(train, test, offsets)) == [5, 6, 6]  # +1, and the root at the sentence's end
    heads_of, side = neighbour_baseline(train, test, offsets)
    assert side == "right" and list(heads_of) == [5, 6, 6]
    left = (np.array([1, 2, 3]), np.array([0, 1, 2]))
    assert neighbour_baseline(left, test, offsets) == (pytest.approx([4, 4, 5]), "left")


def test_fit_reports_each_arc_bundle_beside_its_baselines(relation, selector):
    text = "\n".join(relation.summary())
    assert "arc label 'deprel' (a relation labeller of (head, dependent) arcs, 3 classes)" in text
    assert (
        "lexical baseline (most frequent relation of each dependent's word type, fitted on the training arcs)" in text
    )
    assert "a sentence's arcs in one fold" in text
    lines = "\n".join(selector.summary())
    assert "by uas on the training sentences" in lines and "test UAS: " in lines
    assert "most frequent head offset" in lines and "nearest word to the" in lines and "test pair accuracy" in lines
    manifest = json.loads((selector.path / "manifest.json").read_text())
    assert manifest["level"] == "arc" and manifest["arcs"] == "head" and manifest["classes"] == ["no-arc", "arc"]
    assert manifest["n_features"] == 3 * 32  # [h_head, h_dep, h_head * h_dep] of the tiny model's 32 dimensions


def test_predict_labels_each_gold_arc_and_scores_what_fit_reported(relation, word_features, tmp_path):
    output = tmp_path / "arcs.csv"
    args = ["predict", str(relation.path), str(word_features[1]), "-o", str(output), "--label", "deprel", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"accuracy {relation.test['score']:.4f} on {relation.test['n']} labelled arcs" in result.output
    table = pd.read_csv(output)
    assert list(table.columns[:6]) == ["id", "word", "form", "head", "head_form", "prediction"]
    assert len(table) == relation.test["n"] and f"wrote {relation.test['n']} arc predictions" in result.output
    first = table[table.id == "te0"]  # the test file's first sentence: stored after the 40 training sentences
    with featx.open(word_features[0]) as file:
        start, stop = file.word_offsets()[40], file.word_offsets()[41]
        forms, given = file.word_forms()[start:stop], [int(h) + 1 for h in file.word_heads()[start:stop]]
    labelled = featx.load(relation.path).predict([forms], heads=[given])[0]
    assert list(labelled[np.array(given) > 0]) == list(first.prediction) and labelled[given.index(0)] is None


def test_predict_gives_no_arc_to_a_word_with_an_unknown_head(relation, word_features, tmp_path):
    """A '_' head is no head: its word has no gold arc (no line, a note counts it), never an arc from the root."""
    block = word_features[1].read_text().split("\n\n")[0].split("\n")  # the test file's first sentence
    words = [number for number, line in enumerate(block) if line.count("\t") == 9]
    first = next(number for number in words if block[number].split("\t")[6] != "0")
    fields = block[first].split("\t")
    block[first] = "\t".join([*fields[:6], "_", *fields[7:]])
    corpus = tmp_path / "unknown.conllu"
    corpus.write_text("\n".join(block) + "\n\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["predict", str(relation.path), str(corpus), "-o", str(tmp_path / "p.csv")])
    assert result.exit_code == 0, result.output
    assert "1 word(s) with an unknown head ('_', or none given) have no gold arc: no line" in result.output
    table = pd.read_csv(tmp_path / "p.csv")
    assert len(table) == len(words) - 2 and fields[1] not in set(table.form)  # less the root's word and this one


def test_predict_selects_every_words_head_and_scores_its_uas(selector, word_features, tmp_path):
    output = tmp_path / "heads.csv"
    args = ["predict", str(selector.path), str(word_features[1]), "-o", str(output), "--label", "head", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"UAS {selector.test['score']:.4f} on {selector.test['n']} words with a gold head" in result.output
    # beside the baselines fit used, fitted on its training words: on the test file, fit's own test baselines
    side = "left" if "left_neighbour" in selector.test else "right"
    assert (
        f"; baselines fitted on the bundle's training words: most frequent head offset {selector.test['offset']:.4f}, "
        f"nearest word to the {side} (the root at the sentence's edge) {selector.test[f'{side}_neighbour']:.4f}"
    ) in " ".join(result.output.split())
    assert "fitted (featx fit) on this corpus" not in result.output  # the test file is not the fitted corpus
    table = pd.read_csv(output)
    assert list(table.columns) == ["id", "word", "form", "prediction", "head_form", "score_arc"]
    assert (table.head_form[table.prediction == 0] == "ROOT").all() and len(table) == selector.test["n"]


def test_a_head_selectors_uas_on_its_own_corpus_says_so_and_an_older_bundles_says_it_has_no_baseline(
    selector, word_features, tmp_path, monkeypatch
):
    from featx.deploy import arc_predict, table
    from featx.extraction import read_word_corpus

    words = read_word_corpus([word_features[1]], "conllu", None, "utf-8").words
    monkeypatch.setattr(table, "fitted_corpus_sha256", lambda probe: featx.extraction.file_sha256(word_features[1]))
    args = ["predict", str(selector.path), str(word_features[1]), "-o", str(tmp_path / "h.csv"), "--label", "head"]
    result = CliRunner().invoke(main, [*args, "-q"])
    assert result.exit_code == 0, result.output
    cv = selector.probe.info["selection"]["cv_score"]
    assert (
        "the probe was fitted (featx fit) on this corpus: its training words are among the scored ones, so the score "
        f"above is not held out; featx fit's cross-validated uas: {cv:.4f}"
    ) in " ".join(result.output.split())
    older = featx.load(selector.path)
    del older.info["head_baselines"]  # as a head selector of an earlier featx, which recorded none
    frame = pd.read_csv(tmp_path / "h.csv")
    truth = arc_predict.arc_truth(older, words, "head")
    assert arc_predict.arc_score_line(older, frame, truth, words) == (
        f"UAS {selector.test['score']:.4f} on {selector.test['n']} words with a gold head (no baseline beside it: "
        "this bundle, from an earlier featx, records none; fit it again to get them)"
    )


def test_predict_refuses_what_an_arc_bundle_cannot_do(relation, selector, tmp_path):
    corpus = write_csv(tmp_path / "c.csv", [("the cat sat",)], header=("text",))
    cases = [
        (
            [str(relation.path), str(corpus)],
            r"labels the relation of gold \(head, dependent\) arcs, and .* gives no heads",
        ),
        ([str(selector.path), str(corpus), "--top-k", "2"], "--top-k: a head selector writes each word's"),
        ([str(selector.path), str(corpus), "--label", "deprel"], "a head selector is scored against the input's heads"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, ["predict", *args, "-o", str(tmp_path / "p.csv"), "-q"])
        assert result.exit_code == 2, result.output
        assert_one_clear_error(result.output, message)
    assert not (tmp_path / "p.csv").exists()
    with pytest.raises(InputError, match="got no heads"):
        featx.load(relation.path).predict([["the", "cat"]])
    with pytest.raises(InputError, match=r"heads\[0\] is not 2 whole numbers"):
        featx.load(relation.path).predict([["the", "cat"]], heads=[[0, 3]])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"label": "head", "metric": "macro_f1"}, "a head selector is chosen on its attachment score"),
        ({"label": "deprel", "group": "sent"}, "^group applies to sentence labels"),  # featx.fit: the keyword
        ({"label": "deprel", "classifier": "ridge"}, "featx fit learns word labels as classes"),
        ({"label": "upos", "layer": "cat(0,1)"}, "a word probe reads one layer at a time"),
    ],
)
def test_arc_fits_refuse_what_they_cannot_do(word_features, options, message):
    with pytest.raises(InputError, match=message):
        featx.fit(word_features[0], arcs=True, write=False, **options)


def test_an_arc_bundle_gives_no_layer_directions_and_no_text_estimator(relation, tmp_path):
    from featx.deploy import export_directions
    from featx.sklearn import FittedProbe

    with pytest.raises(InputError, match="an arc probe reads .* which is no direction in a layer's space"):
        export_directions(None, bundle=relation.path, output=tmp_path / "d.safetensors")
    with pytest.raises(ValueError, match=r"arc probe: FittedProbe takes its \[h_head, h_dep, h_head \* h_dep\] rows"):
        FittedProbe(relation.path).predict(["the cat"])


def test_arcs_need_word_data(split_features):
    with pytest.raises(InputError, match="^arcs=True needs word-level data"):
        featx.fit(split_features, label="label", arcs=True, write=False)


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"arcs": "tree"}, "unknown arcs 'tree'"),
        ({"level": "word"}, "a word probe with an arcs field"),
        ({"n_features": 97}, "not three word vectors' widths"),
        ({"classes": ["arc", "no-arc"]}, "a head selector's classes are no-arc and arc"),
        ({"pooling": "cls"}, "unknown word pooling 'cls'"),
        ({"head_baselines": {"offsets": [1, "x"], "side": "left"}}, "not a head selector's offsets and side"),
        ({"head_baselines": {"offsets": [1], "side": "up"}}, "not a head selector's offsets and side"),
    ],
)
def test_a_hostile_arc_manifest_is_refused(selector, tmp_path, edit, message):
    bundle = tmp_path / "b.featx"
    shutil.copytree(selector.path, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    (bundle / "manifest.json").write_text(json.dumps({**manifest, **edit}))
    with pytest.raises(InputError, match=message):
        featx.load(bundle)


def test_a_head_selectors_fold_means_equal_but_for_rounding_tie_to_the_earlier_candidate(monkeypatch):
    """(0.5, 0.5, 0.65) and (0.55, 0.55, 0.55) are the same UAS: the earlier candidate wins, as fit's others do."""
    from types import SimpleNamespace

    from featx.deploy import attach

    folds = {"early": [0.5, 0.5, 0.65], "late": [0.55, 0.55, 0.55]}
    monkeypatch.setattr(attach, "fit_options", lambda plan: {"folds": 3, "seed": 0, "jobs": 1})
    monkeypatch.setattr(attach, "cv_folds", lambda *args: [])
    monkeypatch.setattr(attach, "score_head_candidate", lambda path, spec, *rest: folds[spec])
    plan = SimpleNamespace(
        rows=np.zeros((4, 2), np.int64),
        y=np.arange(4) % 2,
        train=np.arange(4),
        classes=["no-arc", "arc"],
        grouping=SimpleNamespace(codes=np.zeros(4, np.int64)),
        candidates=[("early", "mean"), ("late", "mean")],
        path=None,
    )
    assert np.mean(folds["early"]) < np.mean(folds["late"])  # unrounded, the later one would win
    assert [candidate.spec for candidate in attach.choose_heads(plan)] == ["early", "late"]


def test_a_bundle_fingerprint_nested_too_deeply_names_no_fitted_corpus():
    """The bundle's recorded features-file fingerprint is untrusted: nested too deeply for the JSON parser, it
    names no fitted corpus (as an unreadable one), never a RecursionError."""
    from types import SimpleNamespace

    from featx.deploy.table import fitted_corpus_sha256

    deep = SimpleNamespace(info={"features_file": {"fingerprint": "[" * 200_000 + "]" * 200_000}})
    assert fitted_corpus_sha256(deep) is None
    fine = SimpleNamespace(info={"features_file": {"fingerprint": '{"corpus_sha256": "ab"}'}})
    assert fitted_corpus_sha256(fine) == "ab"
