"""Regression probes: planted signal, the ridge path against scikit-learn, the task choice, the files."""

from __future__ import annotations

import random

import h5py
import numpy as np
import pytest
from support.tiny import WORDS, write_csv

import featx
from featx.errors import InputError
from featx.probing.results import load_results
from featx.probing.solvers import ridge
from featx.report import format_probe

N_ROWS = 120


@pytest.fixture(scope="module")
def score_features(tiny_model, tmp_path_factory):
    """Tiny-model features (mean pooling) with a numeric 'score' column, a few missing, and a class label."""
    folder = tmp_path_factory.mktemp("regression")
    rng = random.Random(0)
    rows = []
    for i in range(N_ROWS):
        text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 9)))
        score = "" if i % 40 == 7 else f"{rng.uniform(1, 5):.2f}"
        rows.append([text, score, ("a", "b")[i % 2]])
    corpus = write_csv(folder / "corpus.csv", rows, header=("text", "score", "kind"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


def _plant(path, layer: int, seed: int = 0) -> np.ndarray:
    """Noise in every layer, plus the standardised score in three features of ``layer``."""
    with featx.FeatureFile(path) as features:
        values = features.label_values("score")
    rng = np.random.default_rng(seed)
    target = np.nan_to_num((values - np.nanmean(values)) / np.nanstd(values))
    with h5py.File(path, "r+") as file:
        dataset = file["pooled"]["mean"]
        data = rng.standard_normal(dataset.shape).astype(np.float32)
        data[:, layer, :3] += 2.0 * target[:, None]
        dataset[...] = data.astype(dataset.dtype)
    return values


def test_planted_layer_wins_and_noise_layers_are_near_zero(score_features, tmp_path):
    path = tmp_path / "f.h5"
    path.write_bytes(score_features.read_bytes())
    values = _plant(path, layer=1)
    result = featx.probe(path, label="score", jobs=1, n_bootstrap=200, output=tmp_path / "r")
    table = result.table
    assert result.meta["task"] == "regression" and set(table.task) == {"regression"}
    assert result.meta["n_labelled"] == int(np.isfinite(values).sum()) < N_ROWS
    singles = table[table.kind == "single"].set_index("layer")
    assert singles.r2.idxmax() == 1 and singles.loc[1, "r2"] > 0.8
    assert (
        singles.loc[1, "spearman"] > 0.8
        and singles.loc[1, "r2_low"] <= singles.loc[1, "r2"] <= singles.loc[1, "r2_high"]
    )
    for layer in (0, 2):
        assert abs(singles.loc[layer, "r2"]) < 0.25 and abs(singles.loc[layer, "selectivity"]) < 0.3
    assert singles.loc[1, "selectivity"] > 0.6 and abs(singles.loc[1, "control_r2"]) < 0.3
    baseline = table[table.kind == "baseline"].iloc[0]
    assert baseline.r2 < 0.05 and baseline.classifier == "mean"
    assert singles.loc[0, "significant_vs_best"] is True
    text = format_probe(result)
    assert "R² [95% CI]" in text and "training mean" in text
    loaded, meta = load_results(result.csv_path)
    assert meta["task"] == "regression" and list(loaded.r2.round(6)) == list(table.r2.round(6))
    assert result.predictions is not None and "layer_1" in result.predictions


def test_ridge_path_agrees_with_sklearn_at_the_chosen_alpha():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 8))
    y = X @ rng.standard_normal(8) + 0.5 * rng.standard_normal(60) + 3.0
    train, test = np.arange(45), np.arange(45, 60)
    ((fit, alpha, _),) = ridge.fit_ridge(X, [y], train, None, ridge.DEFAULT_ALPHAS, seed=0)[0]
    scaler = ridge.ev.fit_scaler(X, train)
    reference = Ridge(alpha=alpha).fit(scaler(X[train]), y[train])
    assert alpha in ridge.DEFAULT_ALPHAS
    np.testing.assert_allclose(fit.coef[:, 0], reference.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fit.predict(scaler(X[test]))[:, 0], reference.predict(scaler(X[test])), rtol=1e-6)


def test_alpha_is_chosen_without_the_test_rows():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 5))
    y = X[:, 0] + 0.1 * rng.standard_normal(50)
    train, test = np.arange(40), np.arange(40, 50)
    poisoned = y.copy()
    poisoned[test] = 1e6  # anything fitted on the training part must not notice
    first = ridge.run_ridge(X, [y], train, test, None, ridge.DEFAULT_ALPHAS, 0)[0]
    second = ridge.run_ridge(X, [poisoned], train, test, None, ridge.DEFAULT_ALPHAS, 0)[0]
    assert first.alpha == second.alpha
    np.testing.assert_allclose(first.predictions, second.predictions)


def test_task_is_chosen_from_the_column_and_can_be_forced(score_features, tmp_path):
    with featx.FeatureFile(score_features) as features:
        assert features.label_values("kind") is None
    result = featx.probe(score_features, label="kind", jobs=1, n_bootstrap=50, write=False, layers="0")
    assert set(result.table.task) == {"classification"}
    with pytest.raises(InputError, match="(?s)looks continuous.*bins=N"):  # forced: 106 values, 106 classes
        featx.probe(score_features, label="score", task="classification", write=False, folds=2)
    with pytest.raises(InputError, match="not numeric"):
        featx.probe(score_features, label="kind", task="regression", write=False)
    with pytest.raises(InputError, match="regression probe"):
        featx.probe(score_features, label="kind", classifiers="ridge", write=False)
    with pytest.raises(InputError, match="no regression form"):
        featx.probe(score_features, label="score", classifiers="svm", write=False)


def test_bins_make_classes_of_a_continuous_label_and_refuse_task_regression(score_features):
    """--bins on a continuous column (which auto probes as a number) probes its quantile bins as classes: it was
    silently left out, and the run was a regression probe."""
    result = featx.probe(score_features, label="score", bins=3, jobs=1, n_bootstrap=50, write=False, layers="0")
    assert set(result.table.task) == {"classification"}
    assert len(result.meta["label_names"]) == 3 and any("in 3 quantile bins" in note for note in result.notes)
    with pytest.raises(InputError, match="bins=3 makes classes.*task='regression'"):
        featx.probe(score_features, label="score", bins=3, task="regression", write=False)


def test_stack_alone_on_a_number_is_refused_before_any_fit(score_features):
    """--layer stack on a number was skipped with a note, and the run wrote results of its baselines only (beside
    other specs stack is still skipped with that note)."""
    from click.testing import CliRunner
    from support.errors import assert_one_clear_error

    from featx.cli import main

    out = CliRunner().invoke(main, ["probe", str(score_features), "--label", "score", "--layer", "stack"])
    assert out.exit_code == 2
    assert_one_clear_error(out.output, r"--layer stack: stack combines linear probes of a class label.*cat\(")


@pytest.mark.slow
def test_mlp_head_and_concatenated_layers(score_features, tmp_path):
    result = featx.probe(
        score_features,
        label="score",
        layers="0,cat(0,1)",
        classifiers="ridge,mlp",
        jobs=1,
        n_bootstrap=50,
        write=False,
        control=False,
    )
    rows = result.table[~result.table.kind.isin(["baseline", "lexical"])]
    assert set(rows.classifier) == {"ridge", "mlp"} and set(rows.kind) == {"single", "cat"}
    assert rows.r2.notna().all() and rows.mae.gt(0).all()


@pytest.mark.slow
def test_cli_probe_table_and_plot_of_a_regression_label(score_features, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from featx.cli import main

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "f.h5"
    path.write_bytes(score_features.read_bytes())
    _plant(path, layer=2)
    runner = CliRunner()
    result = runner.invoke(main, ["probe", str(path), "--label", "score", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "label 'score' (regression)" in result.output and "R² [95% CI]" in result.output
    assert "ridge probe" in result.output and "training mean: R²" in result.output
    csv = tmp_path / "f.score.probe.csv"
    plotted = runner.invoke(main, ["plot", str(csv)])
    assert plotted.exit_code == 0, plotted.output
    assert (tmp_path / "f.score.probe.png").stat().st_size > 0
    by_rank = runner.invoke(main, ["plot", str(csv), "--metric", "spearman", "-o", str(tmp_path / "rho.png")])
    assert by_rank.exit_code == 0, by_rank.output
    assert (tmp_path / "rho.png").exists()
    wrong = runner.invoke(main, ["probe", str(path), "--label", "kind", "--task", "regression"])
    assert wrong.exit_code == 2 and "not numeric" in wrong.output and "Traceback" not in wrong.output


def test_explain_lists_largest_residuals_and_error_by_length(score_features, tmp_path):
    path = tmp_path / "f.h5"
    path.write_bytes(score_features.read_bytes())
    _plant(path, layer=1)
    result = featx.probe(path, label="score", jobs=1, n_bootstrap=50, control=False, output=tmp_path / "r")
    explanation = featx.explain(result.csv_path)
    assert explanation.by_layer.r2.idxmax() == "1"
    residuals = explanation.largest["layer 1"].abs().to_numpy()
    assert np.all(np.diff(residuals) <= 1e-12)  # sorted by the best layer's absolute residual
    assert explanation.by_length["rows"].sum() == result.meta["n_labelled"]
    text = explanation.format(limit=3)
    assert "largest residuals" in text and "mean absolute error by length" in text


def test_rows_are_ordered_by_pooling_then_layer(score_features):
    result = featx.probe(
        score_features,
        label="score",
        poolings="mean",
        layers="2,0,1",
        jobs=1,
        n_bootstrap=20,
        write=False,
        control=False,
    )
    assert list(result.table.kind)[:2] == ["baseline", "lexical"]  # the reference rows first
    assert list(result.table.layer_spec[2:]) == ["2", "0", "1"]  # the order asked for, as for classification


def test_dev_rows_choose_alpha_and_the_refit_uses_the_train_rows_only():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(3)
    X = rng.standard_normal((70, 6))
    y = X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(70)
    train, dev, test = np.arange(40), np.arange(40, 55), np.arange(55, 70)
    fold = ridge.run_ridge(X, [y], train, test, dev, ridge.DEFAULT_ALPHAS, 0)[0]
    scaler = ridge.ev.fit_scaler(X, train)
    errors = {
        alpha: np.mean((Ridge(alpha=alpha).fit(scaler(X[train]), y[train]).predict(scaler(X[dev])) - y[dev]) ** 2)
        for alpha in ridge.DEFAULT_ALPHAS
    }
    assert fold.alpha == min(errors, key=errors.get)
    expected = Ridge(alpha=fold.alpha).fit(scaler(X[train]), y[train]).predict(scaler(X[test]))
    np.testing.assert_allclose(fold.predictions, expected, rtol=1e-6, atol=1e-9)


def test_a_split_file_with_a_random_baseline_probes_both(tiny_model, tmp_path):
    rng = random.Random(1)
    rows = [
        [
            " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 8))),
            f"{i * 0.37 % 5:.2f}",
            ("train", "test", "train", "dev")[i % 4],
        ]
        for i in range(60)
    ]
    corpus = write_csv(tmp_path / "c.csv", rows, header=("text", "score", "split"))
    main, other = tmp_path / "m.h5", tmp_path / "r.h5"
    featx.extract(corpus, model=str(tiny_model), output=main, poolings="mean", progress=False)
    featx.extract(corpus, model=str(tiny_model), output=other, poolings="mean", random_init=True, progress=False)
    result = featx.probe(main, label="score", baseline=other, jobs=1, n_bootstrap=50, write=False)
    assert result.meta["evaluation"] == "split" and result.meta["n_dev"] == 15
    assert set(result.table.features) == {"main", "baseline"}
    assert (result.table.n_test == 15).all() and result.table.r2_low.le(result.table.r2_high).all()


@pytest.mark.slow
def test_learning_curves_of_a_regression_label(score_features, tmp_path):
    from featx.report.figures.learning import format_curve_table, learning_figure

    path = tmp_path / "f.h5"
    path.write_bytes(score_features.read_bytes())
    _plant(path, layer=1)
    result = featx.probe(
        path,
        label="score",
        layers="0,1",
        jobs=1,
        n_bootstrap=50,
        control=False,
        train_sizes="0.25,1.0",
        output=tmp_path / "r",
    )
    curve = result.curve
    assert set(curve.train_size) == {0.25, 1.0} and set(curve.task) == {"regression"}
    top = curve[(curve.layer_spec == "1") & (curve.train_size == 1.0)].r2.iloc[0]
    assert top == pytest.approx(result.table[result.table.layer_spec == "1"].r2.iloc[0])
    assert curve[curve.layer_spec == "1"].n_train.is_monotonic_increasing
    mean = result.table[result.table.layer_spec == "train mean"].r2.iloc[0]  # the training mean on the same rows
    assert curve[curve.train_size == 1.0].baseline.tolist() == pytest.approx([mean, mean])
    assert curve.baseline.notna().all() and (curve.baseline <= 0).all()  # R² of a mean: at most 0 on held-out rows
    printed = format_curve_table(result.curve_path)
    assert "R² by training size" in printed and printed.splitlines()[-1].startswith("train mean ")
    _, written = learning_figure(result.curve_path, output=tmp_path / "curve.png", formats=("png",))
    assert written and written[0].stat().st_size > 0


def test_sweep_refuses_a_forced_regression(score_features):
    from featx.probing.analyses.sweep import from_probe_options

    with pytest.raises(InputError, match="classification-only"):
        from_probe_options(score_features, True, {"label": "score", "task": "regression"})


def test_learning_curves_stratify_each_training_part_by_its_own_quantiles(score_features, monkeypatch):
    """A regression curve subsamples each training part stratified by quantile bins of the target: bins whose edges
    come from that training part alone. Here every test row's target lies above every training row's, so bins
    drawn from all the rows (the test rows' targets moving the edges) would put the training rows in other bins."""
    from featx.probing import evaluation as ev
    from featx.probing.analyses import curves
    from featx.probing.inputs import FeatureJob
    from featx.probing.tasks import regression_jobs
    from featx.selection import LayerSpec

    rng = np.random.default_rng(0)
    train, test = np.arange(80), np.arange(80, 100)
    y = np.concatenate([rng.uniform(0, 1, len(train)), rng.uniform(100, 101, len(test))])
    plan = ev.Plan("split", [(train, test)], [None])
    inputs = regression_jobs.RegressionInputs(False, np.arange(100), y, None, plan, "score", (1.0,), 0, 20, 1)
    seen, subsample = [], curves.subsample
    monkeypatch.setattr(
        curves, "subsample", lambda labels, rows, *rest: seen.append((labels, rows)) or subsample(labels, rows, *rest)
    )
    job = FeatureJob("main", str(score_features), LayerSpec("1", (1,)), "mean", ["ridge"])
    regression_jobs.run_curve_job(job, inputs, [0.5])
    ((labels, rows),) = seen
    np.testing.assert_array_equal(rows, train)
    edges = np.quantile(y[train], [0.2, 0.4, 0.6, 0.8])
    np.testing.assert_array_equal(labels[train], np.searchsorted(edges, y[train], side="right"))
    assert np.bincount(labels[train]).tolist() == [16] * 5  # five bins of the training part, even
