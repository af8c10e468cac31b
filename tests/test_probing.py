"""featx probe: planted signals are found, nothing fitted sees a test fold, every probe kind runs."""

from __future__ import annotations

import json
import random
import shutil

import h5py
import numpy as np
import pytest

import featx
from featx.errors import InputError
from featx.probing import ProbeConfig, evaluation as ev, load_results, probe
from featx.state import last

from conftest import WORDS, write_csv
from planted import plant

N_ROWS = 80


def make_rows(n: int, seed: int = 0, split: bool = False):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(3, 9)))
        label = ("neg", "pos")[i % 2]
        topic = ("a", "b", "c")[i % 3]
        row = [text, label, topic]
        if split:
            row.append("test" if i % 4 == 0 else "train")
        rows.append(row)
    return rows


@pytest.fixture(scope="session")
def tiny_features(tiny_model, tmp_path_factory):
    """Tiny-model features of 80 rows with token states: label (2 classes) and topic (3 classes)."""
    folder = tmp_path_factory.mktemp("probe-data")
    corpus = write_csv(folder / "corpus.csv", make_rows(N_ROWS), header=("text", "label", "topic"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, tokens=True, progress=False)
    return output


@pytest.fixture
def features_copy(tiny_features, tmp_path):
    target = tmp_path / "feats.h5"
    shutil.copy(tiny_features, target)
    return target


def test_planted_layer_is_found_and_control_stays_near_chance(features_copy):
    plant(features_copy, {1: 2.0}, pooling="mean")
    result = probe(features_copy, poolings="mean", layers="all", folds=4, jobs=1, write=False)
    rows = result.table[result.table.kind == "single"].set_index("layer")
    assert rows.loc[1, "is_best"] and rows.is_best.sum() == 1
    assert rows.loc[1, "accuracy"] > 0.9
    assert rows.loc[0, "accuracy"] < 0.75 and rows.loc[2, "accuracy"] < 0.75
    assert rows.loc[1, "control_accuracy"] < 0.7
    assert rows.loc[1, "selectivity"] == pytest.approx(rows.loc[1, "accuracy"] - rows.loc[1, "control_accuracy"])
    assert rows.loc[1, "accuracy_low"] <= rows.loc[1, "accuracy"] <= rows.loc[1, "accuracy_high"]
    assert result.table.iloc[0].kind == "majority" and result.table.iloc[0].accuracy == pytest.approx(0.5)
    assert (rows.evaluation == "4-fold cv").all() and (rows.n_test == N_ROWS).all()


def test_planted_layers_found_with_all_poolings_in_parallel(features_copy):
    plant(features_copy, {2: 2.0}, pooling="mean")
    plant(features_copy, {0: 2.0}, pooling="cls", seed=1)
    result = probe(features_copy, poolings="mean,cls", folds=4, jobs=2, control=False, write=False)
    best = result.table[result.table.is_best]
    assert dict(zip(best.pooling, best.layer)) == {"mean": 2, "cls": 0}
    assert result.table.control_accuracy.isna().all()


class RecordingScaler(ev.Scaler):
    """Column 0 of the planted features holds the row number, so a fit can tell which rows it saw."""

    fits: list[set[int]] = []

    def __init__(self, X):
        RecordingScaler.fits.append(set(np.rint(X[:, 0]).astype(int).tolist()))
        super().__init__(X)


def _scalers_saw_only_training_rows(path, monkeypatch, folds=4):
    RecordingScaler.fits = []
    monkeypatch.setattr(ev, "Scaler", RecordingScaler)
    probe(path, poolings="mean", layers="1", folds=folds, jobs=1, write=False)  # the fits are what is checked
    with featx.open(path) as features:
        labels = features.labels("label")
    plan = ev.make_plan(labels, None, folds, 0, ["neg", "pos"])
    tests = [set(test.tolist()) for _, test in plan.folds]
    assert len(RecordingScaler.fits) >= folds  # every fold (the probe and its control share the training part)
    return all(any(not (seen & test) for test in tests) for seen in RecordingScaler.fits)


def test_no_scaler_ever_sees_a_test_fold(features_copy, monkeypatch):
    with h5py.File(features_copy, "r+") as file:
        data = file["pooled/mean"][...]
        data[:, :, 0] = np.arange(N_ROWS)[:, None]  # float16 holds these integers exactly
        file["pooled/mean"][...] = data
    assert _scalers_saw_only_training_rows(features_copy, monkeypatch)
    # The same check catches a scaler fitted on all rows.
    monkeypatch.setattr(ev, "fit_scaler", lambda X, rows: ev.Scaler(X))
    assert not _scalers_saw_only_training_rows(features_copy, monkeypatch)


def test_cat_stack_mlp_and_attn_run_on_tiny_model_files(tiny_features, tmp_path):
    result = probe(tiny_features, layers="1,cat(-2:),stack", poolings="mean", classifiers="logreg,mlp,attn",
                   folds=3, output=tmp_path / "r", jobs=1)
    table = result.table
    logreg = table[table.classifier == "logreg"].set_index("layer_spec")
    assert list(logreg.index) == ["1", "cat(1,2)", "stack(0,1,2)"]
    assert list(logreg.kind) == ["single", "cat", "stack"]
    weights = json.loads(logreg.loc["stack(0,1,2)", "layer_weights"])
    assert set(weights) == {"0", "1", "2"} and sum(weights.values()) == pytest.approx(1.0, abs=1e-4)
    mlp = table[table.classifier == "mlp"]
    assert set(mlp.layer_spec) == {"1", "cat(1,2)"}  # stack is for linear probes
    attn = table[table.classifier == "attn"]
    assert set(attn.pooling) == {"tokens"} and set(attn.layer_spec) == {"1", "cat(1,2)"}
    probes = table[table.kind != "majority"]
    assert probes.accuracy.between(0, 1).all() and probes.control_accuracy.between(0, 1).all()
    assert any("stack combines linear probes only" in note for note in result.notes)


def test_attention_probe_finds_a_planted_token(tiny_features, tmp_path):
    path = tmp_path / "tokens.h5"
    shutil.copy(tiny_features, path)
    rng = np.random.default_rng(0)
    with h5py.File(path, "r+") as file:
        y, offsets = file["labels/label"][:], file["tokens/offsets"][:]
        states = rng.standard_normal(file["tokens/states"].shape).astype(np.float32)
        for row in range(N_ROWS):  # one token per row carries the label, at a varying position
            position = offsets[row] + (row * 7) % (offsets[row + 1] - offsets[row])
            states[position, 1, :4] += 8.0 * (2 * y[row] - 1)
        file["tokens/states"][...] = states.astype(np.float16)
    result = probe(path, layers="0,1", poolings="mean", classifiers="attn", folds=4, jobs=1, control=False, write=False)
    rows = result.table[result.table.classifier == "attn"].set_index("layer")
    assert rows.loc[1, "accuracy"] > 0.8 and rows.loc[1, "accuracy"] > rows.loc[0, "accuracy"] + 0.2


def test_max_pool_over_concatenated_layers_equals_concatenated_max_pools(tiny_features):
    with featx.open(tiny_features) as features:
        offsets = features.token_offsets
        layers = features.layers
        per_layer = {layer: features.token_states(layer) for layer in layers}
        stored = features.concatenated("max", layers)
    concatenated_states = np.concatenate([per_layer[layer] for layer in layers], axis=1)
    for row in range(N_ROWS):
        tokens = slice(offsets[row], offsets[row + 1])
        max_of_cat = concatenated_states[tokens].max(axis=0)
        cat_of_max = np.concatenate([per_layer[layer][tokens].max(axis=0) for layer in layers])
        np.testing.assert_array_equal(max_of_cat, cat_of_max)
        np.testing.assert_array_equal(max_of_cat, stored[row])  # so cat(...) of stored max pools is exact


def test_results_files_have_the_contract_columns_and_load_back(tiny_features, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "feats.h5"
    shutil.copy(tiny_features, path)
    result = probe(path, layers="0,2", poolings="cls,mean", classifiers="logreg,svm", folds=3, jobs=1)
    assert result.csv_path == tmp_path / "feats.label.probe.csv" and result.json_path.exists()
    assert last("results") == result.csv_path.resolve()
    table, meta = load_results(result.csv_path)
    from_json, meta_json = load_results(result.json_path)
    for column in ("features", "label", "layer_spec", "kind", "layer", "pooling", "classifier", "accuracy",
                   "accuracy_low", "accuracy_high", "macro_f1", "macro_f1_low", "macro_f1_high", "balanced_accuracy",
                   "balanced_accuracy_low", "balanced_accuracy_high", "control_accuracy", "selectivity", "C",
                   "fit_seconds", "n_train", "n_test", "evaluation", "per_class_f1", "is_best", "layer_weights"):
        assert column in table.columns and column in from_json.columns
    assert len(table) == 1 + 2 * 2 * 2 and meta == meta_json
    assert meta["label"] == "label" and meta["class_counts"] == {"neg": 40, "pos": 40} and meta["folds"] == 3
    assert {"featx_version", "sklearn_version", "torch_version", "model", "features_file", "seed"} <= set(meta)
    assert set(json.loads(table.per_class_f1.iloc[1])) == {"neg", "pos"}
    assert table.groupby(["pooling", "classifier"]).is_best.sum().loc[lambda s: s.index.get_level_values(0) != ""].eq(1).all()
    assert np.allclose(table.accuracy, from_json.accuracy)
    assert table.layer.iloc[1:].notna().all() and table.layer.iloc[:1].isna().all()
    assert "* best layer" in result.format_table()


def test_fixed_split_uses_the_test_rows_and_bootstrap_intervals(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "split.csv", make_rows(N_ROWS, split=True), header=("text", "label", "topic", "split"))
    featx.extract(corpus, model=str(tiny_model), output=tmp_path / "split.h5", progress=False)
    result = probe(tmp_path / "split.h5", label="topic", layers="1", poolings="mean", jobs=1, write=False)
    row = result.table.iloc[1]
    assert row.evaluation == "split" and row.n_test == N_ROWS // 4 and row.n_train == N_ROWS - N_ROWS // 4
    assert row.accuracy_low <= row.accuracy <= row.accuracy_high
    assert result.meta["folds"] is None and result.meta["label_names"] == ["a", "b", "c"]


def test_missing_labels_are_left_out_and_counted(features_copy):
    with h5py.File(features_copy, "r+") as file:
        codes = file["labels/label"][...]
        codes[:6] = -1
        file["labels/label"][...] = codes
    result = probe(features_copy, layers="1", poolings="mean", folds=3, jobs=1, write=False)
    assert result.meta["n_missing_labels"] == 6 and result.meta["n_labelled"] == N_ROWS - 6
    assert result.table.iloc[1].n_test == N_ROWS - 6


def test_baseline_is_probed_with_the_same_folds(tiny_model, tiny_features, tmp_path):
    corpus = tiny_features.parent / "corpus.csv"
    baseline = tmp_path / "random.h5"
    featx.extract(corpus, model=str(tiny_model), output=baseline, random_init=True, progress=False)
    result = probe(tiny_features, baseline=baseline, layers="1,2", poolings="mean", folds=3, jobs=1, write=False)
    assert list(result.table.features.value_counts().sort_index().items()) == [("baseline", 2), ("main", 3)]
    assert result.meta["baseline_file"] == str(baseline.resolve())
    assert "baseline features" in result.format_table()


def test_metrics_match_scikit_learn():
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

    rng = np.random.default_rng(0)
    y_true, y_pred = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    y_pred[y_pred == 2] = 1  # class 2 never predicted
    values = ev.metrics_from_confusion(ev.confusion(y_true, y_pred, 3))
    assert values["accuracy"] == pytest.approx(accuracy_score(y_true, y_pred))
    assert values["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y_true, y_pred))
    assert values["macro_f1"] == pytest.approx(f1_score(y_true, y_pred, average="macro", zero_division=0))
    low, high = ev.bootstrap_intervals(y_true, y_pred, 3, 500, 0)["accuracy"]
    assert low < values["accuracy"] < high
    mean, low, high = ev.t_interval(np.array([0.8, 0.82, 0.78, 0.81, 0.79]))
    assert mean == pytest.approx(0.8) and low == pytest.approx(0.8 - 2.776 * 0.0158 / 5**0.5, abs=1e-3)


def test_config_refuses_bad_options():
    with pytest.raises(InputError, match="classifier 'tree'"):
        ProbeConfig(classifiers="logreg,tree").validate()
    with pytest.raises(InputError, match="at least 2 folds"):
        ProbeConfig(folds=1).validate()


def test_balanced_class_weights_help_a_rare_class(features_copy):
    with h5py.File(features_copy, "r+") as file:
        codes = np.zeros(N_ROWS, np.int32)
        codes[::8] = 1  # 10 of 80 rows in the rare class
        file["labels/label"][...] = codes
    plant(features_copy, {1: 1.2}, pooling="mean")
    runs = {balanced: probe(features_copy, layers="1", poolings="mean", classifiers="logreg,svm,mlp", folds=5, jobs=1,
                            control=False, balanced=balanced, write=False) for balanced in (False, True)}
    assert runs[True].meta["balanced"] and not runs[False].meta["balanced"]
    for classifier in ("logreg", "svm", "mlp"):
        plain, weighted = (runs[b].table.set_index("classifier").loc[classifier] for b in (False, True))
        assert 0 <= weighted.balanced_accuracy <= 1
        assert weighted.balanced_accuracy >= plain.balanced_accuracy - 0.05


def test_sites_are_probed_side_by_side(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "corpus.csv", make_rows(N_ROWS), header=("text", "label", "topic"))
    path = tmp_path / "sites.h5"
    featx.extract(corpus, model=str(tiny_model), output=path, progress=False, poolings="mean,cls",
                  sites="ffn,attn_out")
    rng = np.random.default_rng(0)
    with h5py.File(path, "r+") as file:  # plant a label signal in the ffn site's layer 2 only
        y = file["labels/label"][:]
        data = rng.standard_normal(file["sites/ffn/pooled/mean"].shape).astype(np.float32)
        data[:, 1, :3] += 2.0 * (2 * y[:, None] - 1)
        file["sites/ffn/pooled/mean"][...] = data.astype(file["sites/ffn/pooled/mean"].dtype)
    result = probe(path, sites="hidden,ffn,attn_out", poolings="mean", folds=4, jobs=1, write=False, control=False)
    table = result.table
    assert list(dict.fromkeys(table.site)) == ["", "hidden", "ffn", "attn_out"]  # majority first
    singles = table[table.kind == "single"]
    assert singles.groupby("site").layer.apply(list).to_dict() == {"hidden": [0, 1, 2], "ffn": [1, 2],
                                                                   "attn_out": [1, 2]}
    ffn = singles[singles.site == "ffn"].set_index("layer")
    assert ffn.loc[2, "accuracy"] > 0.9 and ffn.loc[2, "is_best"] and ffn.loc[1, "accuracy"] < 0.8
    assert singles.groupby("site").is_best.sum().eq(1).all()  # one best layer per site
    assert result.meta["sites"] == ["hidden", "ffn", "attn_out"]
    assert "logreg probe on site ffn" in result.format_table()
    with pytest.raises(InputError, match="site 'pre_ln' is not stored .* stored sites: hidden, ffn, attn_out"):
        probe(path, sites="pre_ln", write=False)


def test_results_from_before_sites_load_as_hidden(tiny_features, tmp_path):
    result = probe(tiny_features, layers="1", poolings="mean", folds=3, jobs=1, output=tmp_path / "r")
    old = result.table.drop(columns="site")
    old.to_csv(tmp_path / "old.csv", index=False)
    table, _ = load_results(tmp_path / "old.csv")
    assert list(table.columns[:2]) == ["features", "site"] and (table.site == "hidden").all()


def test_c_search_gets_past_the_majority_plateau_on_imbalanced_data():
    """Tiny Cs all predict the majority class; the path must not stop on that plateau."""
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.15).astype(int)  # 15% minority class
    X = rng.normal(size=(300, 20)).astype(np.float32)
    X[:, 0] += 0.6 * (2 * y - 1)  # a clear but not huge signal in one feature
    rows = np.arange(300)
    fit_rows, val_rows = ev.inner_split(y, rows, seed=0)
    cs = list(np.logspace(-4, 1, 11))
    majority = np.bincount(y[val_rows]).max() / len(val_rows)
    C, model = ev.search_c("svm", X, y, fit_rows, val_rows, cs, balanced=False, seed=0)
    assert C > 1e-3 and np.mean(model.predict(X[val_rows]) == y[val_rows]) > majority
    [(C, theta, offsets)] = ev.search_logreg(X, [y], fit_rows, val_rows, 2, cs, balanced=False)
    assert C > 1e-3
    assert np.mean(np.argmax(X[val_rows] @ theta[:-1] + theta[-1], axis=1) == y[val_rows]) > majority


def test_a_split_column_without_test_rows_falls_back_to_cv_and_says_so(tiny_model, tmp_path):
    rows = [(text, label, "train") for text, label, _ in make_rows(40)]  # no test rows at all
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "label", "split"))
    featx.extract(corpus, model=str(tiny_model), output=tmp_path / "f.h5", poolings="mean", progress=False)
    result = probe(tmp_path / "f.h5", layers="1", folds=3, jobs=1, write=False)
    assert result.meta["evaluation"] == "3-fold cv"
    assert any("no train and test rows" in note for note in result.notes)
