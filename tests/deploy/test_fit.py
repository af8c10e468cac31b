"""featx.fit: the choice on training rows only, the bundle round trip, every head and feature set."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import featx
from featx.deploy import export_directions
from featx.deploy import head as heads
from featx.deploy.features import stored_matrix
from featx.errors import InputError


def _stored(path, probe, rows=None):
    with featx.open(path) as features:
        return stored_matrix(features, probe.spec, probe.pooling, rows)


def _test_rows(path):
    with featx.open(path) as features:
        return np.flatnonzero(np.asarray(features.split, dtype=str) == "test")


@pytest.mark.slow
def test_bundle_round_trip_predicts_exactly_as_the_fitted_probe(fitted, split_features):
    loaded = featx.load(fitted.path)
    X = _stored(split_features, fitted.probe)
    assert np.array_equal(loaded.predict_features(X), fitted.probe.predict_features(X))
    assert np.array_equal(loaded.predict_proba_features(X), fitted.probe.predict_proba_features(X))
    assert loaded.spec == fitted.chosen.spec and loaded.pooling == fitted.chosen.pooling
    assert loaded.classes == ["neg", "pos"]


@pytest.mark.slow
def test_the_reported_test_score_is_the_probes_accuracy_on_the_test_rows(fitted, split_features):
    test = _test_rows(split_features)
    with featx.open(split_features) as features:
        truth = np.asarray(features.label_names("label"), dtype=object)[features.labels("label")[test]]
    predicted = featx.load(fitted.path).predict_features(_stored(split_features, fitted.probe, test))
    assert fitted.test["score"] == pytest.approx(np.mean(predicted == truth))
    assert fitted.test["n"] == len(test)
    assert fitted.test["low"] <= fitted.test["score"] <= fitted.test["high"]


def test_the_manifest_records_the_choice_and_the_extraction(fitted, split_features):
    import json

    manifest = json.loads((fitted.path / "manifest.json").read_text())
    assert manifest["selection"]["metric"] == "accuracy"
    assert len(manifest["selection"]["candidates"]) == 6  # 3 layers x 2 poolings
    with featx.open(split_features) as features:
        assert manifest["features_file"]["fingerprint"] == features.fingerprint
        assert manifest["extraction"]["model_sha256"] == features.attrs["model_sha256"]
    assert len(manifest["extraction"]["tokenizer_sha256"]) == 64
    assert sorted(p.name for p in fitted.path.iterdir()) == ["manifest.json", "weights.safetensors"]


def _plant(path, layer_for_train: int, layer_for_test: int) -> tuple[np.ndarray, np.ndarray]:
    """Noise everywhere; the label's signal in one layer for training rows and another for test rows."""
    rng = np.random.default_rng(1)
    with h5py.File(path, "r+") as file:
        y = file["labels/label"][:]
        test = np.asarray([s.decode() if isinstance(s, bytes) else s for s in file["rows/split"][:]]) == "test"
        for pooling in ("mean", "cls"):
            data = rng.standard_normal(file["pooled"][pooling].shape).astype(np.float32)
            sign = (2 * y - 1).astype(np.float32)
            data[~test, layer_for_train, :3] += 3 * sign[~test, None]
            data[test, layer_for_test, :3] += 3 * sign[test, None]
            file["pooled"][pooling][...] = data
    return y, test


def test_auto_chooses_on_training_rows_and_never_fits_on_test_rows(split_features, tmp_path, monkeypatch):
    import shutil

    path = tmp_path / "planted.h5"
    shutil.copy(split_features, path)
    _, test = _plant(path, layer_for_train=1, layer_for_test=2)
    with featx.open(path) as features:
        test_rows = {row.tobytes() for layer in features.layers for pooling in features.poolings
                     for row in features.features(pooling, layer)[test]}  # fmt: skip
    seen: list[np.ndarray] = []
    real = heads.fit_head
    monkeypatch.setattr(
        heads, "fit_head", lambda classifier, X, *a, **k: seen.append(X) or real(classifier, X, *a, **k)
    )
    result = featx.fit(path, label="label", write=False, folds=3)
    assert result.chosen.spec.layers == (1,)  # the test rows would have picked layer 2
    assert seen and all(row.tobytes() not in test_rows for X in seen for row in X)
    assert sum(len(X) for X in seen[-1:]) == int((~test).sum())  # the final fit: every training row


@pytest.mark.parametrize("classifier", ["svm", "mlp"])
def test_other_heads_round_trip(split_features, tmp_path, classifier):
    result = featx.fit(split_features, label="topic", layer="2", pooling="mean", classifier=classifier,
                       output=tmp_path / "m.featx", folds=2)  # fmt: skip
    loaded = featx.load(result.path)
    X = _stored(split_features, result.probe)
    assert np.array_equal(loaded.predict_features(X), result.probe.predict_features(X))
    assert np.array_equal(loaded.scores_features(X), result.probe.scores_features(X))
    assert loaded.classes == ["a", "b", "c"]


def test_regression_with_ridge_and_a_concatenation(split_features, tmp_path):
    result = featx.fit(split_features, label="score", layer="cat(1,2)", pooling="mean", output=tmp_path / "r.featx")
    loaded = featx.load(result.path)
    assert loaded.task == "regression" and loaded.head.classifier == "ridge"
    assert loaded.head.n_features == 64 and loaded.spec.kind == "cat"
    assert result.metric == "r2" and "training mean" in "\n".join(result.summary())
    X = _stored(split_features, result.probe)
    assert np.array_equal(loaded.predict_features(X), result.probe.predict_features(X))


def test_separate_pairs_read_the_probes_pair_feature(tiny_model, tmp_path):
    from support.deploy_data import deploy_rows
    from support.tiny import write_csv

    rows = [[text, text[::-1], label, split] for text, label, _, _, split in deploy_rows(40)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("text", "other", "label", "split"))
    output = tmp_path / "pairs.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", text_pair_col="other",
                  pair_mode="separate", progress=False)  # fmt: skip
    result = featx.fit(output, label="label", layer="1", output=tmp_path / "p.featx", folds=2)
    loaded = featx.load(result.path)
    assert loaded.head.n_features == 4 * 32  # [u, v, |u-v|, u*v]
    assert loaded.extraction["pair_mode"] == "separate" and loaded.extraction["text_pair_col"] == "other"
    # [u, v, |u-v|, u*v] is no direction in the layer's space: featx directions (and --intervene) refuse it (it
    # wrote 4 * 32 wide "layer.1" directions)
    with pytest.raises(InputError, match=r"encoded separately reads \[u, v, \|u-v\|, u\*v\]"):
        export_directions(result.path, output=tmp_path / "d.safetensors")


def test_the_weighted_stack_round_trips(split_features, tmp_path):
    result = featx.fit(
        split_features, label="topic", layer="stack", pooling="mean", output=tmp_path / "s.featx", folds=2
    )
    loaded = featx.load(result.path)
    assert loaded.spec.kind == "stack" and loaded.head.widths == [32, 32, 32]
    X = _stored(split_features, result.probe)
    assert isinstance(X, list) and len(X) == 3
    assert np.array_equal(loaded.predict_proba_features(X), result.probe.predict_proba_features(X))
    assert np.allclose(loaded.predict_proba_features(X).sum(axis=1), 1.0)
    # the same stack as featx probe --layer stack trains on these rows (its inner fits went through the C search's
    # warm-started path, the probe's through a fresh fit: its out-of-fold scores, so its meta-classifier, differed)
    from featx.probing.config import DEFAULT_CS
    from featx.probing.evaluation import run_stack

    with featx.open(split_features) as features:
        split, codes, names = np.asarray(features.split, str), features.labels("topic"), features.label_names("topic")
    y = np.array([loaded.classes.index(names[code]) for code in codes])
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    probed = run_stack("logreg", X, y, train, test, None, len(loaded.classes), DEFAULT_CS, False, 0)
    assert np.array_equal(loaded.head.predict_codes([block[test] for block in X]), probed.predictions)
    k = len(loaded.classes)
    meta = np.abs(loaded.head.meta.weights["coef"].T).reshape(k, len(X), k).sum(axis=(0, 2))
    # the meta-classifier's weights (uniform when its coefficients are all 0, as run_stack weighs them: the tiny model's
    # layers carry no topic, and each layer's C chosen by log-loss is the grid's smallest, whose scores are the prior's)
    weights = meta / meta.sum() if meta.sum() > 0 else np.full(len(X), 1 / len(X))
    np.testing.assert_allclose(weights, probed.layer_weights, rtol=1e-5)
    for part, c in zip(result.probe.head.parts, (0.01, 0.1, 0.72), strict=True):
        part.C = c  # layers that chose different C: the stack's C is their geometric mean, 0.0896...
    chosen = next(line for line in result.summary() if line.startswith("chosen:"))
    assert "(C 0.09, the geometric mean of the layers' C)" in chosen, chosen


def test_a_binary_svm_stack_feeds_its_meta_classifier_what_probes_does(split_features):
    """fit's stack of a binary svm gave its meta-classifier each layer's margin m as -m/2, m/2, probe's as -m, m:
    another meta-classifier, whose test predictions differed from probe's here. Now both run one code path."""
    from featx.deploy.stack import fit_stack
    from featx.probing import fit_linear
    from featx.probing.evaluation import run_stack

    with featx.open(split_features) as features:
        split, y = np.asarray(features.split, str), np.asarray(features.labels("label"), np.int64)
        X = [features.features("mean", layer) for layer in features.layers]
    train, test, cs = np.flatnonzero(split == "train"), np.flatnonzero(split == "test"), (1.0,)
    head = fit_stack("svm", [block[train] for block in X], y[train], ["neg", "pos"], cs, False, 0)
    probed = run_stack("svm", X, y, train, test, None, 2, cs, False, 0)
    assert np.array_equal(head.predict_codes([block[test] for block in X]), probed.predictions)
    inputs = head._inputs([block[test] for block in X])  # the meta-features: each layer's -m, m, as probe's stack
    for layer, block in enumerate(X):
        model, scaler, _, _ = fit_linear("svm", block, y, train, None, cs, False, 0)
        margin = model.decision_function(scaler(block[test]))
        np.testing.assert_allclose(inputs[:, 2 * layer : 2 * layer + 2], np.stack([-margin, margin], 1), atol=1e-5)


def test_a_stack_of_a_number_is_refused(split_features):
    from featx.errors import InputError

    with pytest.raises(InputError, match="stack combines linear probes of a class label"):
        featx.fit(split_features, label="score", layer="stack", write=False)


def test_separate_pairs_from_texts_match_the_stored_pair_feature(tiny_model, tmp_path):
    from support.deploy_data import deploy_rows
    from support.tiny import write_csv

    rows = [[text, text[::-1], label, split] for text, label, _, _, split in deploy_rows(30)]
    corpus = write_csv(tmp_path / "pairs.csv", rows, header=("text", "other", "label", "split"))
    output = tmp_path / "pairs.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", text_pair_col="other",
                  pair_mode="separate", progress=False)  # fmt: skip
    probe = featx.fit(output, label="label", layer="cat(1,2)", output=tmp_path / "p.featx", folds=2).probe
    stored = _stored(output, probe)
    assert np.array_equal(probe.features([r[0] for r in rows], [r[1] for r in rows]), stored)


@pytest.mark.slow  # job workers in processes (~3 s)
def test_candidates_scored_side_by_side_give_the_same_choice_and_scores(split_features):
    one = featx.fit(split_features, label="label", folds=3, write=False, jobs=1)
    two = featx.fit(split_features, label="label", folds=3, write=False, jobs=2)
    assert [(c.spec.name, c.pooling, c.fold_scores) for c in one.candidates] == [
        (c.spec.name, c.pooling, c.fold_scores) for c in two.candidates
    ]


def test_the_lexical_baseline_stands_beside_the_test_score(fitted, split_features):
    # the same rows, fold and C rule as featx probe's lexical row (this file has no dev part): the same score
    chosen = dict(layers=fitted.chosen.spec.name, poolings=fitted.chosen.pooling)
    probed = featx.probe(split_features, label="label", **chosen, write=False, jobs=1)
    lexical = probed.table[probed.table.kind == "lexical"].iloc[0]
    assert fitted.test["lexical"] == pytest.approx(lexical.accuracy, abs=1e-12)
    assert fitted.test["lexical_low"] <= fitted.test["lexical"] <= fitted.test["lexical_high"]
    line = next(line for line in fitted.summary() if line.startswith("lexical baseline"))
    assert line == (
        f"lexical baseline (TF-IDF n-grams, fitted on the training rows): {fitted.test['lexical']:.4f} "
        f"[95% CI {fitted.test['lexical_low']:.4f}, {fitted.test['lexical_high']:.4f}] on the same rows"
    )
    assert featx.load(fitted.path).info["selection"]["test"]["lexical"] == pytest.approx(lexical.accuracy)
    # the control task of the chosen layer and pooling: featx probe's control labels, learnt by the same head on the
    # same rows, so probe's control_accuracy (fit printed no control task)
    single = probed.table[probed.table.kind == "single"].iloc[0]
    assert fitted.test["control"] == pytest.approx(single.control_accuracy, abs=1e-12)
    assert fitted.test["score"] == pytest.approx(single.accuracy, abs=1e-12)
    line = next(line for line in fitted.summary() if line.startswith("control task"))
    selectivity = fitted.test["score"] - fitted.test["control"]
    assert line == (
        f"control task (labels permuted over the rows): {fitted.test['control']:.4f} on the same rows; "
        f"selectivity {selectivity:+.4f}"
    )
    assert featx.load(fitted.path).info["selection"]["test"]["control"] == pytest.approx(single.control_accuracy)


def test_a_file_without_texts_fits_without_the_lexical_baseline_and_says_so(split_features, tmp_path):
    import shutil

    path = tmp_path / "blank.h5"
    shutil.copy(split_features, path)
    with h5py.File(path, "r+") as file:
        file["rows/text"][...] = [""] * len(file["rows/text"])
    result = featx.fit(path, label="label", layer="0", pooling="mean", write=False, folds=3)
    assert "lexical" not in result.test and "no texts stored: no lexical baseline" in result.notes
    assert not any(line.startswith("lexical baseline") for line in result.summary())


def test_a_class_only_in_the_val_rows_gives_a_bundle_that_loads_and_never_predicts_it(tiny_model, tmp_path):
    from support.deploy_data import deploy_rows
    from support.tiny import write_csv

    rows = []
    for i, (text, label, _, _, split) in enumerate(deploy_rows(60)):
        if split == "train" and i % 4 == 1:
            split, label = "val", ("rare" if i % 8 == 1 else label)
        rows.append([text, label, split])
    corpus = write_csv(tmp_path / "val.csv", rows, header=("text", "label", "split"))
    features = tmp_path / "val.h5"
    featx.extract(corpus, model=str(tiny_model), output=features, layers="1", poolings="mean", progress=False)
    result = featx.fit(features, label="label", output=tmp_path / "val.featx", folds=2)
    assert result.probe.classes == ["neg", "pos", "rare"]  # 'rare' is in the val rows only: never trained on
    loaded = featx.load(result.path)
    assert np.isneginf(loaded.head.weights["intercept"]).tolist() == [False, False, True]
    X = _stored(features, loaded)
    assert np.array_equal(loaded.predict_features(X), result.probe.predict_features(X))
    assert "rare" not in set(loaded.predict_features(X))
    assert np.allclose(loaded.predict_proba_features(X)[:, 2], 0.0)


def test_candidates_whose_fold_scores_tie_but_for_float_rounding_go_to_the_earlier_one(monkeypatch):
    """Fold scores (0.5, 0.5, 0.65) and (0.55, 0.55, 0.55) both average 0.55 (np.mean: 0.5499999999999999 and
    0.55): the earlier candidate comes first, as an exact tie does."""
    from featx.deploy import choose as choosing
    from featx.selection import LayerSpec

    folds = {"3": [0.5, 0.5, 0.65], "5": [0.55, 0.55, 0.55]}
    monkeypatch.setattr(choosing, "score_candidate", lambda path, spec, *rest: np.array(folds[spec.name]))
    candidates = [(LayerSpec("single", (layer,)), "cls") for layer in (3, 5)]
    y = np.arange(30) % 2
    scored = choosing.choose(
        "f.h5", candidates, np.arange(30), y, ["a", "b"], "accuracy", {"folds": 3, "seed": 0, "jobs": 1}
    )
    assert [candidate.spec.name for candidate in scored] == ["3", "5"]
    assert scored[0].score == scored[1].score == 0.55


def test_no_control_skips_the_control_task_as_probe_s_does(split_features):
    # --no-control, declared once for probe and fit: no control head, no control line, nothing recorded
    fitted = featx.fit(split_features, label="label", layer="0", pooling="mean", control=False, write=False, jobs=1)
    assert "control" not in fitted.test
    assert not any(line.startswith("control task") for line in fitted.summary())
