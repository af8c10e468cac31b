"""``featx.probe`` end to end (``featx/probing/api.py``): planted signals are found, every probe kind runs, results
files keep their contract. Fold-level rigour is in ``test_evaluation.py``."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
from support.planted import plant
from support.probe_data import N_ROWS, make_rows
from support.shared_files import copy_features
from support.tiny import write_csv

import featx
from featx.errors import InputError
from featx.probing import ProbeConfig, load_results, probe
from featx.report import format_probe
from featx.state import last


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


@pytest.mark.slow
def test_planted_layers_found_with_all_poolings_in_parallel(features_copy):
    plant(features_copy, {2: 2.0}, pooling="mean")
    plant(features_copy, {0: 2.0}, pooling="cls", seed=1)
    result = probe(features_copy, poolings="mean,cls", folds=4, jobs=2, control=False, write=False)
    best = result.table[result.table.is_best]
    assert dict(zip(best.pooling, best.layer, strict=False)) == {"mean": 2, "cls": 0}
    assert result.table.control_accuracy.isna().all()


@pytest.mark.slow
def test_cat_stack_mlp_and_attn_run_on_tiny_model_files(tiny_features, tmp_path):
    result = probe(
        tiny_features,
        layers="1,cat(-2:),stack",
        poolings="mean",
        classifiers="logreg,mlp,attn",
        folds=3,
        output=tmp_path / "r",
        jobs=1,
    )
    table = result.table
    logreg = table[(table.classifier == "logreg") & (table.kind != "lexical")].set_index("layer_spec")
    assert list(logreg.index) == ["1", "cat(1,2)", "stack(0,1,2)"]
    assert list(logreg.kind) == ["single", "cat", "stack"]
    weights = json.loads(logreg.loc["stack(0,1,2)", "layer_weights"])
    assert set(weights) == {"0", "1", "2"} and sum(weights.values()) == pytest.approx(1.0, abs=1e-4)
    mlp = table[table.classifier == "mlp"]
    assert set(mlp.layer_spec) == {"1", "cat(1,2)"}  # stack is for linear probes
    attn = table[table.classifier == "attn"]
    assert set(attn.pooling) == {"tokens"} and set(attn.layer_spec) == {"1", "cat(1,2)"}
    probes = table[~table.kind.isin(["majority", "lexical"])]
    assert probes.accuracy.between(0, 1).all() and probes.control_accuracy.between(0, 1).all()
    assert any("stack combines linear probes only" in note for note in result.notes)


@pytest.mark.slow
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


@pytest.mark.slow
def test_results_files_have_the_contract_columns_and_load_back(tiny_features, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "feats.h5"
    shutil.copy(tiny_features, path)
    result = probe(path, layers="0,2", poolings="cls,mean", classifiers="logreg,svm", folds=3, jobs=1)
    assert result.csv_path == tmp_path / "feats.label.probe.csv" and result.json_path.exists()
    assert last("results") == result.csv_path.resolve()
    table, meta = load_results(result.csv_path)
    from_json, meta_json = load_results(result.json_path)
    for column in (
        "features",
        "label",
        "layer_spec",
        "kind",
        "layer",
        "pooling",
        "classifier",
        "accuracy",
        "accuracy_low",
        "accuracy_high",
        "macro_f1",
        "macro_f1_low",
        "macro_f1_high",
        "balanced_accuracy",
        "balanced_accuracy_low",
        "balanced_accuracy_high",
        "control_accuracy",
        "selectivity",
        "C",
        "fit_seconds",
        "n_train",
        "n_test",
        "evaluation",
        "per_class_f1",
        "is_best",
        "layer_weights",
    ):
        assert column in table.columns and column in from_json.columns
    assert len(table) == 2 + 2 * 2 * 2 and meta == meta_json  # majority and lexical rows, then the probes
    assert meta["label"] == "label" and meta["class_counts"] == {"neg": 40, "pos": 40} and meta["folds"] == 3
    assert {"featx_version", "sklearn_version", "torch_version", "model", "features_file", "seed"} <= set(meta)
    assert set(json.loads(table.per_class_f1.iloc[1])) == {"neg", "pos"}
    assert (
        table.groupby(["pooling", "classifier"])
        .is_best.sum()
        .loc[lambda s: s.index.get_level_values(0) != ""]
        .eq(1)
        .all()
    )
    assert np.allclose(table.accuracy, from_json.accuracy)
    assert table.layer.iloc[2:].notna().all() and table.layer.iloc[:2].isna().all()  # majority, lexical
    assert "* best layer" in format_probe(result)


def test_fixed_split_uses_the_test_rows_and_bootstrap_intervals(tiny_model, tmp_path):
    corpus = write_csv(
        tmp_path / "split.csv", make_rows(N_ROWS, split=True), header=("text", "label", "topic", "split")
    )
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


@pytest.mark.slow
def test_baseline_is_probed_with_the_same_folds(tiny_model, tiny_features, tmp_path):
    corpus = tiny_features.parent / "corpus.csv"
    baseline = tmp_path / "random.h5"
    featx.extract(corpus, model=str(tiny_model), output=baseline, random_init=True, progress=False)
    result = probe(tiny_features, baseline=baseline, layers="1,2", poolings="mean", folds=3, jobs=1, write=False)
    assert list(result.table.features.value_counts().sort_index().items()) == [
        ("baseline", 2),
        ("main", 4),
    ]  # main: majority, lexical, 2 layers
    assert result.meta["baseline_file"] == str(baseline.resolve())
    assert "baseline features" in format_probe(result)


def test_config_refuses_bad_options():
    with pytest.raises(InputError, match="classifier 'tree'"):
        ProbeConfig(classifiers="logreg,tree")
    with pytest.raises(InputError, match="at least 2 folds"):
        ProbeConfig(folds=1)


@pytest.mark.slow
def test_balanced_class_weights_help_a_rare_class(features_copy):
    with h5py.File(features_copy, "r+") as file:
        codes = np.zeros(N_ROWS, np.int32)
        codes[::8] = 1  # 10 of 80 rows in the rare class
        file["labels/label"][...] = codes
    plant(features_copy, {1: 1.2}, pooling="mean")
    runs = {
        balanced: probe(
            features_copy,
            layers="1",
            poolings="mean",
            classifiers="logreg,svm,mlp",
            folds=5,
            jobs=1,
            control=False,
            balanced=balanced,
            write=False,
        )
        for balanced in (False, True)
    }
    assert runs[True].meta["balanced"] and not runs[False].meta["balanced"]
    for classifier in ("logreg", "svm", "mlp"):
        plain, weighted = (
            runs[b].table[runs[b].table.kind != "lexical"].set_index("classifier").loc[classifier]
            for b in (False, True)
        )
        assert 0 <= weighted.balanced_accuracy <= 1
        assert weighted.balanced_accuracy >= plain.balanced_accuracy - 0.05


@pytest.mark.slow
def test_sites_are_probed_side_by_side(site_features, tmp_path):
    path = copy_features(site_features, tmp_path)  # the planting below changes the file
    rng = np.random.default_rng(0)
    with h5py.File(path, "r+") as file:  # plant a label signal in the ffn site's layer 2 only
        y = file["labels/label"][:]
        data = rng.standard_normal(file["sites/ffn/pooled/mean"].shape).astype(np.float32)
        data[:, 1, :3] += 2.0 * (2 * y[:, None] - 1)
        file["sites/ffn/pooled/mean"][...] = data.astype(file["sites/ffn/pooled/mean"].dtype)
    result = probe(path, sites="all", poolings="mean", folds=4, jobs=1, write=False, control=False)  # every stored
    table = result.table
    assert list(dict.fromkeys(table.site)) == ["", "hidden", "ffn", "attn_out"]  # majority first
    singles = table[table.kind == "single"]
    assert singles.groupby("site").layer.apply(list).to_dict() == {
        "hidden": [0, 1, 2],
        "ffn": [1, 2],
        "attn_out": [1, 2],
    }
    ffn = singles[singles.site == "ffn"].set_index("layer")
    assert ffn.loc[2, "accuracy"] > 0.9 and ffn.loc[2, "is_best"] and ffn.loc[1, "accuracy"] < 0.8
    assert singles.groupby("site").is_best.sum().eq(1).all()  # one best layer per site
    assert result.meta["sites"] == ["hidden", "ffn", "attn_out"]
    assert "logreg probe on site ffn" in format_probe(result)
    with pytest.raises(InputError, match="site 'pre_ln' is not stored .* stored sites: hidden, ffn, attn_out"):
        probe(path, sites="pre_ln", write=False)


def test_results_from_before_sites_load_as_hidden(tiny_features, tmp_path):
    result = probe(tiny_features, layers="1", poolings="mean", folds=3, jobs=1, output=tmp_path / "r")
    old = result.table.drop(columns="site")
    old.to_csv(tmp_path / "old.csv", index=False)
    table, _ = load_results(tmp_path / "old.csv")
    assert list(table.columns[:2]) == ["features", "site"] and (table.site == "hidden").all()


def test_a_split_column_without_test_rows_falls_back_to_cv_and_says_so(tiny_model, tmp_path):
    rows = [(text, label, "train") for text, label, _ in make_rows(40)]  # no test rows at all
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "label", "split"))
    featx.extract(corpus, model=str(tiny_model), output=tmp_path / "f.h5", poolings="mean", progress=False)
    result = probe(tmp_path / "f.h5", layers="1", folds=3, jobs=1, write=False)
    assert result.meta["evaluation"] == "3-fold cv"
    assert any("no train and test rows" in note for note in result.notes)


def test_probe_meta_is_typed_and_writes_the_json_it_reads(tiny_features, tmp_path):
    from featx.probing import ProbeMeta
    from featx.probing.meta import Level, Task

    result = probe(tiny_features, layers="1", poolings="mean", folds=3, jobs=1, output=tmp_path / "r")
    assert result.meta.task is Task.CLASSIFICATION and result.meta.level is Level.SENTENCE
    written = json.loads(result.json_path.read_text())["meta"]
    assert "task" not in written and "level" not in written  # classification of sentences: as ever
    assert result.meta.to_dict() == written == dict(result.meta)
    again = ProbeMeta.from_dict(written)
    assert again.to_dict() == written and list(again.to_dict()) == list(written)


def test_probe_meta_reads_older_results():
    from featx.probing import ProbeMeta
    from featx.probing.meta import Level, Task

    old = {"features_file": "/x/feats.h5", "label": "label", "n_rows": 10, "evaluation": "3-fold cv", "future": 1}
    meta = ProbeMeta.from_dict(old)
    assert meta.task is Task.CLASSIFICATION and meta.level is Level.SENTENCE and meta.n_rows == 10
    assert meta["future"] == 1 and meta.sites == []
    words = ProbeMeta.from_dict({**old, "level": "arc", "label": "deprel"})
    assert words.level is Level.ARC and words.level.is_words and words["level"] == "arc"
    regression = ProbeMeta.from_dict({**old, "task": "regression", "target": {"mean": 1.0}})
    assert regression.task is Task.REGRESSION and regression["task"] == "regression"
