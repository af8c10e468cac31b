"""featx fit / predict --arcs: a relation labeller of gold arcs and a head selector, fitted on featx probe --arcs's own
items (fit and probe agree on them), never on a test sentence; the head selector's argmax and its baselines by hand;
predict on CoNLL-U, and its refusals; hostile arc manifests."""

from __future__ import annotations

import copy
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
from featx.deploy import attach
from featx.deploy import head as heads
from featx.deploy.attach import neighbour_baseline, offset_baseline
from featx.errors import InputError

FAST = {"folds": 3, "jobs": 1, "pooling": "mean"}
SELECTOR_CS = (0.1, 1.0)  # a head selector's C path: two fits a fold, not six


@pytest.fixture(scope="module")
def relation(word_features, tmp_path_factory):
    output = tmp_path_factory.mktemp("arcs") / "deprel.featx"
    return featx.fit(word_features[0], label="deprel", arcs=True, layer="0,1", output=output, **FAST)


@pytest.fixture(scope="module")
def selector(word_features, tmp_path_factory):
    output = tmp_path_factory.mktemp("arcs") / "head.featx"
    return featx.fit(word_features[0], label="head", arcs=True, layer="0,1", output=output, cs=SELECTOR_CS, **FAST)


def _stored(features, layer: int):
    with featx.open(features) as file:
        test = np.asarray(file.split, dtype=str)[file.word_sentence()] == "test"
        return file.word_features("mean", layer), file.word_offsets(), file.word_heads(), test


def test_fit_and_probe_fit_the_same_relation_labeller_on_the_same_arcs(word_features):
    """At one layer and pooling, featx fit's relation labeller and featx probe --arcs's probe are one fit: the same C,
    the same test accuracy of the same predictions, the same word-type baseline."""
    features = word_features[0]
    fitted = featx.fit(features, label="deprel", arcs=True, layer="1", pooling="mean", folds=3, write=False, jobs=1)
    probed = featx.probe(
        features, label="deprel", arcs=True, layers="1", poolings="mean", control=False, write=False, jobs=1
    )
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert float(row["C"]) == pytest.approx(fitted.probe.head.C)
    assert fitted.test["score"] == pytest.approx(float(row["accuracy"]), abs=1e-9)
    lexical = probed.table[probed.table["kind"] == "lexical"].iloc[0]
    assert fitted.test["lexical"] == pytest.approx(float(lexical["accuracy"]))
    assert fitted.chosen.spec.layers == (1,) and fitted.probe.arcs == "relation"


@pytest.mark.parametrize("label", ["deprel", "head"])
def test_no_arc_fit_ever_sees_a_test_sentence(word_features, monkeypatch, label):
    features = word_features[0]
    seen: list[np.ndarray] = []
    states, offsets, _, test = _stored(features, 1)
    if label == "head":  # the selector's sentences: every fold's fitting and held-out ones, and the final fit's
        real_sentences = attach.Sentences
        monkeypatch.setattr(attach, "Sentences", lambda *a: seen.append(a[-1]) or real_sentences(*a))
        featx.fit(
            features, label=label, arcs=True, layer="1", pooling="mean", folds=3, write=False, jobs=1, cs=SELECTOR_CS
        )
        tested = np.unique(np.searchsorted(offsets, np.flatnonzero(test), side="right") - 1)
        assert len(seen) == 3 * 2 + 1 and not any(np.isin(sentences, tested).any() for sentences in seen)
        return
    real = heads.fit_head
    monkeypatch.setattr(heads, "fit_head", lambda c, X, *a, **k: seen.append(X) or real(c, X, *a, **k))
    featx.fit(features, label=label, arcs=True, layer="1", pooling="mean", folds=3, write=False, jobs=1)
    tested = {row.tobytes() for row in states[test]}
    for X in seen:  # [h_head, h_dep, h_head * h_dep]: neither word of any fitted pair is a test word
        width = states.shape[1]
        assert not any(
            X[i, :width].tobytes() in tested or X[i, width : 2 * width].tobytes() in tested for i in range(len(X))
        )
    assert len(seen) == 3 + 1 + 1  # one head per fold, the final head, and the control task's (its training arcs)


def test_the_head_selector_decodes_each_sentence_as_its_best_tree_and_an_earlier_one_takes_each_best_head(
    selector, word_features
):
    """The bundle's heads: each sentence's best tree over every candidate's score by hand (itself the root); fit's
    test UAS is theirs, and its per-word argmax UAS that of each word's best candidate on its own, which is what a
    bundle without head_decode (schema 2, an earlier featx's) predicts."""
    from featx.deploy.arc_tree import tree_heads
    from featx.deploy.bundle import manifest_of

    probe = featx.load(selector.path)
    layer = probe.spec.layers[0]
    states, offsets, gold, test = _stored(word_features[0], layer)
    earlier = copy.copy(probe)  # as featx wrote it before head_decode: schema 2
    earlier.info = {key: value for key, value in probe.info.items() if key != "head_decode"}
    assert manifest_of(earlier, "0" * 64, 1)["schema_version"] == 2 and "head_decode" not in manifest_of(earlier, "", 1)
    with featx.open(word_features[0]) as file:
        forms = file.word_forms()
    right, total = {"tree": 0, "argmax": 0}, 0
    for s in np.unique(np.searchsorted(offsets, np.flatnonzero(test), side="right") - 1):
        X, n = states[offsets[s] : offsets[s + 1]], int(offsets[s + 1] - offsets[s])
        pairs = np.stack([_pair(X, h, d) for h in range(n) for d in range(n)])  # every (candidate, word) pair
        margins = (probe.head.scores(pairs) @ np.array([-1.0, 1.0])).reshape(n, n)
        truth = np.where(gold[offsets[s] : offsets[s + 1]] < 0, np.arange(n), gold[offsets[s] : offsets[s + 1]])
        for name, chosen in (("tree", tree_heads(margins)), ("argmax", np.argmax(margins, axis=0))):
            right[name] += int(np.sum(chosen == truth))
            if s == np.searchsorted(offsets, np.flatnonzero(test)[0], side="right") - 1:  # the first: predict too
                bundle = probe if name == "tree" else earlier
                words = [forms[offsets[s] : offsets[s + 1]]]
                assert list(bundle.predict(words)[0]) == [0 if h == d else h + 1 for d, h in enumerate(chosen)]
        total += n
    assert selector.test["n"] == total and selector.test["score"] == pytest.approx(right["tree"] / total)
    assert selector.test["argmax"] == pytest.approx(right["argmax"] / total)


def _pair(words: np.ndarray, head: int, dependent: int) -> np.ndarray:
    """A head selector's features of one pair, by hand: [h, d, h * d], h and d on the head's side (left, right),
    and the signed offset's bucket (|offset| 1, 2, 3, 4, 5-7, 8-15, 16+ left, the same right; 0 the root)."""
    h, d, offset = words[head], words[dependent], head - dependent
    left, right = float(offset < 0), float(offset > 0)
    size = sum(abs(offset) >= bound for bound in (1, 2, 3, 4, 5, 8, 16))
    onehot = np.zeros(15, np.float32)
    onehot[0 if offset == 0 else size + (7 if offset > 0 else 0)] = 1.0
    return np.concatenate([h, d, h * d, h * left, h * right, d * left, d * right, onehot])


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
    assert "each held-out sentence's heads as its best tree" in lines and "what the bundle predicts" in lines
    assert "the same words' heads without the tree, for comparison" in lines
    assert "most frequent head offset" in lines and "nearest word to the" in lines and "test pair accuracy" not in lines
    manifest = json.loads((selector.path / "manifest.json").read_text())
    assert manifest["level"] == "arc" and manifest["arcs"] == "head" and manifest["classes"] == ["no-arc", "arc"]
    assert manifest["schema_version"] == 3 and manifest["offset_buckets"] == [1, 2, 3, 4, 5, 8, 16]
    assert manifest["head_decode"] == "tree"
    assert manifest["n_features"] == 7 * 32 + 15  # seven blocks of the tiny model's 32 dimensions, 15 buckets
    assert json.loads((relation.path / "manifest.json").read_text())["schema_version"] == 1


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
    assert (
        f"UAS {selector.test['score']:.4f} on {selector.test['n']} words with a gold head, decoded as each sentence's "
        "best tree; baselines"
    ) in " ".join(result.output.split())
    # beside the baselines fit used, fitted on its training words: on the test file, fit's own test baselines
    side = "left" if "left_neighbour" in selector.test else "right"
    assert (
        f"; baselines fitted on the bundle's training words: most frequent head offset {selector.test['offset']:.4f}, "
        f"nearest word to the {side} (the root at the sentence's edge) {selector.test[f'{side}_neighbour']:.4f}"
    ) in " ".join(result.output.split())
    assert "fitted (featx fit) on this corpus" not in result.output  # the test file is not the fitted corpus
    table = pd.read_csv(output)
    assert list(table.columns) == ["id", "word", "form", "prediction", "head_form", "score_arc", "p_head"]
    assert (table.head_form[table.prediction == 0] == "ROOT").all() and len(table) == selector.test["n"]
    assert ((table.p_head > 0) & (table.p_head <= 1)).all()  # the chosen head's probability among its candidates


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
    del older.info["head_baselines"], older.info["head_decode"]  # as a head selector of an earlier featx
    frame = pd.read_csv(tmp_path / "h.csv")
    truth = arc_predict.arc_truth(older, words, "head")
    assert arc_predict.arc_score_line(older, frame, truth, words) == (
        f"UAS {selector.test['score']:.4f} on {selector.test['n']} words with a gold head, each its best-scoring "
        "candidate (no baseline beside it: this bundle, from an earlier featx, records none; fit it again to get them)"
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
        ({"label": "head", "classifier": "mlp"}, "^classifier='mlp': a head selector is a linear softmax"),
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
        ({"n_features": 97}, "not a head selector's pair features"),
        ({"offset_buckets": None, "n_features": 239}, "not three word vectors' widths"),  # an earlier featx's
        ({"offset_buckets": [2, 1]}, "not a logreg head selector's"),
        ({"offset_buckets": [1], "classifier": "mlp"}, "not a logreg head selector's"),
        ({"head_decode": "greedy"}, "its head_decode 'greedy' is not a head selector's decoding"),
        ({"head_decode": "tree", "offset_buckets": None, "n_features": 96}, "is not a head selector's decoding"),
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


def test_a_head_selectors_fold_means_equal_but_for_rounding_tie_to_the_earlier_candidate_and_close_cs_to_the_smaller(
    monkeypatch,
):
    """(0.5, 0.5, 0.65) and (0.55, 0.55, 0.55) are the same UAS: the earlier candidate wins, as fit's others do. A
    candidate's Cs within C_TIE of its best UAS tie too, and the smallest C wins, with its folds' mean solution."""
    from types import SimpleNamespace

    from featx.deploy import attach

    folds = {"early": [[0.5], [0.5], [0.65]], "late": [[0.55], [0.55], [0.55]]}
    starts = {"early": [{"offset": np.zeros(15)}], "late": [{"offset": np.ones(15)}]}  # at each C
    cs = [(1.0,)]
    monkeypatch.setattr(attach, "fit_options", lambda plan: {"folds": 3, "seed": 0, "jobs": 1, "cs": cs[0]})
    monkeypatch.setattr(attach, "cv_folds", lambda *args: [])
    monkeypatch.setattr(attach, "score_head_candidate", lambda path, spec, *rest: (folds[spec], starts[spec]))
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
    chosen = attach.choose_heads(plan)
    assert [candidate.spec for candidate in chosen] == ["early", "late"] and chosen[0].start is starts["early"][0]
    cs[0], below = (0.1, 1.0, 10.0), 0.7 - attach.C_TIE / 2
    folds["early"] = [[below, 0.7, 0.69]] * 3  # C 0.1 ties with the best, C 1
    folds["late"] = [[0.7 - 2 * attach.C_TIE, 0.7, 0.69]] * 3  # C 0.1 is further below: C 1
    starts["early"] = starts["late"] = [{"C": c} for c in cs[0]]
    chosen = attach.choose_heads(plan)  # each scored at its chosen C: the later candidate first
    assert [(candidate.spec, candidate.C, candidate.start) for candidate in chosen] == [
        ("late", 1.0, {"C": 1.0}),
        ("early", 0.1, {"C": 0.1}),
    ]
    assert chosen[0].score == pytest.approx(0.7) and chosen[1].score == pytest.approx(below)


def test_a_bundle_fingerprint_nested_too_deeply_names_no_fitted_corpus():
    """The bundle's recorded features-file fingerprint is untrusted: nested too deeply for the JSON parser, it
    names no fitted corpus (as an unreadable one), never a RecursionError."""
    from types import SimpleNamespace

    from featx.deploy.table import fitted_corpus_sha256

    deep = SimpleNamespace(info={"features_file": {"fingerprint": "[" * 200_000 + "]" * 200_000}})
    assert fitted_corpus_sha256(deep) is None
    fine = SimpleNamespace(info={"features_file": {"fingerprint": '{"corpus_sha256": "ab"}'}})
    assert fitted_corpus_sha256(fine) == "ab"


def test_a_head_selector_of_an_earlier_featx_still_loads_and_scores_h_head_h_dep_and_their_product(selector, tmp_path):
    """A bundle without offset_buckets (schema 1) reads [h_head, h_dep, h_head * h_dep], as it did when written."""
    from featx.deploy import write_bundle
    from featx.deploy.head import Head

    older = featx.load(selector.path)
    del older.info["offset_buckets"], older.info["head_decode"]
    coef = np.random.default_rng(0).normal(size=(3 * 32, 2))
    older.head = Head(
        "logreg",
        np.zeros(96, np.float32),
        np.ones(96, np.float32),
        {"coef": coef, "intercept": np.zeros(2)},
        ["no-arc", "arc"],
        1.0,
    )
    write_bundle(older, tmp_path / "old.featx")
    loaded = featx.load(tmp_path / "old.featx")
    assert json.loads((tmp_path / "old.featx" / "manifest.json").read_text())["schema_version"] == 1
    words = ["the", "cat", "sat"]
    states = loaded.word_features([words])[0]
    pairs = np.array([(h, d) for h in range(3) for d in range(3)])
    margins = (
        np.hstack([states[pairs[:, 0]], states[pairs[:, 1]], states[pairs[:, 0]] * states[pairs[:, 1]]]) @ coef
    ) @ [-1, 1]
    best = np.argmax(margins.reshape(3, 3), axis=0)
    assert list(loaded.predict([words])[0]) == [0 if b == d else b + 1 for d, b in enumerate(best)]


def test_on_a_toy_treebank_whose_heads_follow_a_rule_the_selector_beats_the_offset_baseline():
    """Heads by a rule of word types the most frequent offset cannot follow: a determiner's head is the next noun (one
    or two adjectives may come between), an adjective's the next noun, a noun's the verb (before or after it), the verb
    the root. The selector, fitted on training sentences only, finds every head; the offset baseline far fewer."""
    import torch

    from featx.deploy.arc_select import Sentences, fit_path, selector_features, standardiser, to_head

    rng = np.random.default_rng(0)
    types = {"det": 0, "adj": 1, "noun": 2, "verb": 3}
    sentences = []
    for _ in range(120):
        phrases = [["det", *["adj"] * int(rng.integers(0, 3)), "noun"] for _ in range(2)]
        sentences.append(phrases[0] + ["verb"] + phrases[1])
    words = [t for sentence in sentences for t in sentence]
    offsets = np.r_[0, np.cumsum([len(sentence) for sentence in sentences])]
    gold = np.empty(len(words), np.int64)
    for s, sentence in enumerate(sentences):
        verb, start = sentence.index("verb"), offsets[s]
        for i, kind in enumerate(sentence):
            noun = next((j for j in range(i, len(sentence)) if sentence[j] == "noun"), i)
            gold[start + i] = start + {"verb": i, "noun": verb}.get(kind, noun)
    states = np.eye(4, dtype=np.float32)[[types[t] for t in words]] + rng.normal(0, 0.05, (len(words), 4)).astype(
        np.float32
    )
    train = np.arange(80)  # the test sentences: 80..119
    mean, scale = standardiser(states, np.arange(offsets[80]))
    fitting = Sentences(torch, ((states - mean) / scale).astype(np.float32), offsets, gold, train)
    head = to_head(fit_path(fitting, [1.0])[-1][1], mean, scale, 1.0)
    dependents = np.arange(offsets[80], offsets[120])
    predicted, margins, probability = attach.select_heads(head, states, offsets, dependents)
    # the factorised scores are the head's scores of the pairs' features, the probability their softmax
    margin_of = lambda pairs: attach.arc_margins(head, selector_features(states, pairs))  # noqa: E731
    assert np.allclose(margins, margin_of(np.stack([predicted, dependents], axis=1)), atol=1e-6)
    candidates = np.arange(offsets[80], offsets[81])
    scores = margin_of(np.stack([candidates, np.full(len(candidates), dependents[0])], axis=1))
    assert np.isclose(probability[0], 1 / np.exp(scores - scores.max()).sum())
    baseline = attach.offset_baseline(
        (np.arange(offsets[80]), gold[: offsets[80]]), (dependents, gold[dependents]), offsets
    )
    uas, offset_uas = np.mean(predicted == gold[dependents]), np.mean(baseline == gold[dependents])
    assert uas == 1.0 and offset_uas < 0.6, (uas, offset_uas)


def test_the_selectors_written_out_gradient_is_autograds():
    """The loss and gradient the selector's L-BFGS is given (written out, not through autograd) are those of the
    softmax over each word's candidates, the unknown head (-1) and the padding left out."""
    import torch

    from featx.deploy import arc_select

    rng = np.random.default_rng(1)
    offsets, d = np.array([0, 3, 7, 8, 13]), 3
    gold = np.array([1, 1, 1, 4, 4, 4, 5, 7, 8, 10, 10, 10, -1])
    fitting = arc_select.Sentences(torch, rng.normal(size=(13, d)).astype(np.float32), offsets, gold, np.arange(4))
    theta = torch.tensor(rng.normal(size=6 * d + arc_select.n_buckets()), dtype=torch.float32, requires_grad=True)
    loss = sum(
        torch.nn.functional.cross_entropy(
            arc_select._scores(torch, theta, batch, d).clone(), batch["gold"][:, 0], reduction="none"
        )[batch["known"]].sum()
        for batch in fitting.batches
    )
    loss.backward()
    with torch.no_grad():
        written, gradient = arc_select._loss_and_gradient(torch, theta, fitting)
    assert fitting.n == 12 and np.isclose(float(written), float(loss.detach()), rtol=1e-5)
    assert torch.allclose(gradient, theta.grad, rtol=1e-4, atol=1e-5)
