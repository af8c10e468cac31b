"""featx fit without a test split: its cross-validated score stands beside the baselines a test score gets (the
majority class or training mean, the lexical baseline; a head selector's offset and neighbour baselines), each
cross-validated over the very folds the candidates were scored on, fitted on each fold's training part only; the
figures are recorded in the bundle's ``selection.cv_baselines``. Each is recomputed here by hand over the folds the
candidates were given."""

from __future__ import annotations

import numpy as np
import pytest
from support.shared_files import resplit

import featx
from featx.deploy import attach, choose
from featx.deploy import head as heads
from featx.deploy.arc_plan import resolve_arc_fit
from featx.deploy.attach import attached_in, neighbour_baseline, offset_baseline
from featx.deploy.choose import score_of
from featx.deploy.config import FitConfig
from featx.deploy.plan import resolve_fit
from featx.probing import fold_mean, lexical_predictions, per_type_predictions, permuted_control, word_types
from featx.probing.tasks import lexical as lexical_module
from featx.probing.tasks import word_items

FAST = {"folds": 3, "jobs": 1, "layer": "1", "pooling": "mean", "write": False}


def _all_train(split):
    return np.full(len(split), "train", dtype=object)


@pytest.fixture(scope="module")
def sentences(split_features, tmp_path_factory):
    return resplit(split_features, tmp_path_factory.mktemp("no-test"), _all_train)


@pytest.fixture(scope="module")
def words(word_features, tmp_path_factory):
    return resplit(word_features[0], tmp_path_factory.mktemp("no-test-words"), _all_train)


@pytest.fixture
def spy(monkeypatch):
    """The folds every candidate was scored on, and every (train, test) the TF-IDF and per-type baselines were
    fitted and scored on."""
    seen: dict[str, list] = {"folds": [], "tfidf": [], "types": []}
    score, heads = choose.score_candidate, attach.score_head_candidate

    def scored(*args, **kwargs):
        seen["folds"].append(args[6])
        return score(*args, **kwargs)

    def scored_heads(*args, **kwargs):
        seen["folds"].append(args[4])  # (path, spec, pooling, pairs, splits, cs)
        return heads(*args, **kwargs)

    for name in ("classify_fold", "regress_fold"):
        real = getattr(lexical_module, name)

        def fold(texts, y, train, test, *rest, real=real):
            seen["tfidf"].append((train, test, rest[-1]))  # rest[-1]: the groups its C (alpha) holdout keeps whole
            return real(texts, y, train, test, *rest)

        monkeypatch.setattr(lexical_module, name, fold)
    types = word_items.per_type_predictions

    def per_type(keys, y, train, test, k):
        seen["types"].append((train, test))
        return types(keys, y, train, test, k)

    monkeypatch.setattr(word_items, "per_type_predictions", per_type)
    monkeypatch.setattr(choose, "score_candidate", scored)
    monkeypatch.setattr(attach, "score_head_candidate", scored_heads)
    return seen


def _by_hand(plan, folds, predict) -> float:
    y, k = plan.y[plan.train], None if plan.classes is None else len(plan.classes)
    return fold_mean([score_of(plan.metric, y[val], predict(fit, val), k) for fit, val in folds])


@pytest.mark.parametrize("label", ["label", "score"])
def test_a_sentence_fit_without_a_test_split_prints_its_baselines_over_the_same_folds(sentences, spy, label):
    fitted = featx.fit(sentences, label=label, **FAST)
    plan = resolve_fit(FitConfig.build(sentences, label=label, **FAST))
    (folds,) = spy["folds"]
    assert fitted.test is None and len(plan.test) == 0 and len(folds) == 3
    cv = fitted.probe.info["selection"]["cv_baselines"]
    assert cv == fitted.cv_baselines and cv["folds"] == 3
    y, rows = plan.y[plan.train], plan.rows[plan.train]
    if plan.classes is None:
        constant = lambda fit, val: np.full(len(val), np.mean(y[fit]))  # noqa: E731
    else:
        constant = lambda fit, val: np.full(len(val), np.argmax(np.bincount(y[fit], minlength=2)))  # noqa: E731
    assert cv["baseline"] == pytest.approx(_by_hand(plan, folds, constant), abs=1e-12)
    options = {"classes": plan.classes is not None, "cs": plan.config.cs, "alphas": plan.config.alphas}
    options.update(balanced=plan.config.balanced, seed=plan.config.seed)
    with featx.open(sentences) as file:

        def tfidf(fit, val):
            return lexical_predictions(file, rows, y, fit, val, options, [])

        assert cv["lexical"] == pytest.approx(_by_hand(plan, folds, tfidf), abs=1e-12)
    # every TF-IDF fit of the baseline (not those by hand above) was a fold's training part, scored on its rest
    fits = [(fit, val) for fit, val, _ in spy["tfidf"][: len(folds)]]
    assert [(list(a), list(b)) for a, b in fits] == [(list(a), list(b)) for a, b in folds]
    assert all(not np.intersect1d(fit, val).size for fit, val in fits)
    reference, lexical = ("majority class", "TF-IDF n-grams") if label == "label" else ("training mean", "TF-IDF")
    line = next(line for line in fitted.summary() if line.startswith("cross-validated"))
    assert f"; {reference} {cv['baseline']:.4f}; {lexical}" in line and f"{cv['lexical']:.4f} (the same 3 folds" in line
    assert "no test split: the cross-validated score is the estimate" in fitted.summary()
    # the control task over the same folds: probe's control labels, each fold's head fitted on its training part
    y_control = permuted_control(plan.y, int(plan.config.seed))[plan.train]
    with featx.open(sentences) as file:
        X = file.features("mean", 1)[rows]
    classes = plan.classes

    def control(fit, val):
        head = heads.fit_head(fitted.probe.head.classifier, X[fit], y_control[fit], classes, plan.config.cs,
                              plan.config.alphas, False, int(plan.config.seed))  # fmt: skip
        return head.predict_codes(X[val])

    k = None if classes is None else len(classes)
    by_hand = fold_mean([score_of(plan.metric, y_control[val], control(fit, val), k) for fit, val in folds])
    assert cv["control"] == pytest.approx(by_hand, abs=1e-12)
    name = "labels" if label == "label" else "targets"
    assert f"; control task ({name} permuted over the rows): {cv['control']:.4f}; selectivity" in line


@pytest.mark.parametrize("label", ["label", "score"])
def test_with_group_every_fold_of_the_tfidf_baseline_keeps_groups_whole(grouped_file, spy, label):
    fitted = featx.fit(grouped_file, label=label, group="doc", **FAST)
    plan = resolve_fit(FitConfig.build(grouped_file, label=label, group="doc", **FAST))
    (folds,) = spy["folds"]
    groups = plan.grouping.codes[plan.train]
    assert len(spy["tfidf"]) == len(folds) == fitted.cv_baselines["folds"] == 3 and "lexical" in fitted.cv_baselines
    for (fit, val, holdout_groups), (fold_fit, fold_val) in zip(spy["tfidf"], folds, strict=True):
        assert np.array_equal(fit, fold_fit) and np.array_equal(val, fold_val)
        assert not np.intersect1d(groups[fit], groups[val]).size and np.array_equal(holdout_groups, groups)


@pytest.mark.parametrize("arcs", [False, True])
def test_a_word_or_relation_fit_without_a_test_split_keeps_sentences_whole_in_its_baselines(words, spy, arcs):
    label = "deprel" if arcs else "upos"
    fitted = featx.fit(words, label=label, arcs=arcs, **FAST)
    config = FitConfig.build(words, label=label, arcs=arcs, **FAST)
    plan = resolve_arc_fit(config) if arcs else resolve_fit(config)
    (folds,) = spy["folds"]
    y, rows, sentence = plan.y[plan.train], plan.rows[plan.train], plan.grouping.codes[plan.train]
    assert all(not np.intersect1d(sentence[fit], sentence[val]).size for fit, val in folds)  # whole sentences
    with featx.open(words) as file:
        keys = word_types(file)[rows[:, 1] if arcs else rows].astype(str)
    k = len(plan.classes)

    def types(fit, val):
        return per_type_predictions(keys, y, fit, val, k)

    def majority(fit, val):
        return np.full(len(val), np.argmax(np.bincount(y[fit], minlength=k)))

    cv = fitted.probe.info["selection"]["cv_baselines"]
    assert cv["baseline"] == pytest.approx(_by_hand(plan, folds, majority), abs=1e-12)
    assert cv["lexical"] == pytest.approx(_by_hand(plan, folds, types), abs=1e-12)
    fits = spy["types"]  # every per-type fit of the baseline: a fold's training words, never its held-out ones
    assert [(list(a), list(b)) for a, b in fits] == [(list(a), list(b)) for a, b in folds]
    name = "most frequent relation of each dependent's word type" if arcs else "most frequent class of each word type"
    assert f"{name} {cv['lexical']:.4f} (the same 3 folds" in fitted.summary()[2]


def test_a_head_selector_without_a_test_split_prints_its_baselines_over_the_same_folds(words, spy):
    fitted = featx.fit(words, label="head", arcs=True, cs=(0.1, 1.0), **FAST)  # two fits a fold, not six
    plan = resolve_arc_fit(FitConfig.build(words, label="head", arcs=True, **FAST))
    (folds,) = spy["folds"]
    with featx.open(words) as file:
        offsets, heads = np.asarray(file.word_offsets(), np.int64), file.word_heads()
    sentence_of = np.searchsorted(offsets, plan.rows[plan.train][:, 1], side="right") - 1
    offset, neighbour, sides = [], [], set()
    for fit, val in folds:
        train, test = (attached_in(offsets, heads, np.unique(sentence_of[part])) for part in (fit, val))
        assert not np.intersect1d(train[0], test[0]).size
        offset.append(np.mean(offset_baseline(train, test, offsets) == test[1]))
        nearest, side = neighbour_baseline(train, test, offsets)
        neighbour.append(np.mean(nearest == test[1]))
        sides.add(side)
    (side,) = sides
    cv = fitted.cv_baselines
    assert cv == {
        "folds": 3,
        "offset": pytest.approx(np.mean(offset)),
        f"{side}_neighbour": pytest.approx(np.mean(neighbour)),
    }
    line = fitted.summary()[2]
    assert line.startswith("cross-validated uas") and f"; most frequent head offset {cv['offset']:.4f}; " in line
    assert f"nearest word to the {side} {cv[f'{side}_neighbour']:.4f} (the same 3 folds" in line


def test_with_a_test_split_the_baselines_stand_beside_the_test_score_only(split_features):
    fitted = featx.fit(split_features, label="label", **FAST)
    assert fitted.test is not None and fitted.cv_baselines is None
    assert "cv_baselines" not in fitted.probe.info["selection"]
    assert next(line for line in fitted.summary() if line.startswith("cross-validated")).endswith(
        f"{fitted.chosen.score:.4f}"
    )
