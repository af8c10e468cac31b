"""Learning curves: parsing --train-sizes, stratified seeded subsamples, curves from featx.probe."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from featx.errors import InputError
from featx.probing import probe
from featx.probing.analyses.curves import parse_train_sizes, subsample
from featx.report.figures.learning import format_curve_table
from featx.report.text.format import num


def test_parse_train_sizes():
    assert parse_train_sizes("1.0,0.1, 0.5") == [0.1, 0.5, 1.0]
    assert parse_train_sizes("50,100") == [50.0, 100.0]
    for bad in ("x", "0", "1.5", ""):
        with pytest.raises(InputError):
            parse_train_sizes(bad)


def test_subsample_is_stratified_seeded_and_inside_the_rows():
    y = np.array([0] * 80 + [1] * 20)
    rows = np.arange(100)
    part = subsample(y, rows, 0.25, seed=3)
    assert len(part) == 25 and np.bincount(y[part]).tolist() == [20, 5]
    assert np.array_equal(part, subsample(y, rows, 0.25, seed=3))
    assert len(subsample(y, rows, 10, seed=0)) == 10 and len(subsample(y, rows, 1.0, seed=0)) == 100
    assert len(subsample(y, rows, 3, seed=0)) == 4  # at least two rows of each class


@pytest.mark.slow
def test_probe_learning_curves(tiny_model, tmp_path):
    from support.planted import make_features, plant

    path = make_features(tmp_path, tiny_model)
    plant(path, {1: 3.0})
    result = probe(path, folds=4, jobs=1, control=False, train_sizes="0.25,1.0", curve_layers="0,1", n_bootstrap=100)
    curve = pd.read_csv(result.curve_path)
    assert len(curve) == 4 and set(curve.layer) == {0, 1}
    full = curve[(curve.layer == 1) & (curve.train_size == 1.0)].iloc[0]
    single = result.table[(result.table.kind == "single") & (result.table.layer == 1)].iloc[0]
    assert full.accuracy == pytest.approx(single.accuracy)  # the same folds, the whole training part
    assert curve[curve.train_size == 0.25].n_train.max() < full.n_train
    assert full.accuracy > curve[(curve.layer == 0) & (curve.train_size == 1.0)].accuracy.iloc[0]
    # each point's baseline: the majority class fitted on the same subsampled rows (the whole part: the table's)
    majority = result.table[result.table.kind == "majority"].accuracy.iloc[0]
    assert curve[curve.train_size == 1.0].baseline.tolist() == pytest.approx([majority, majority])
    small = curve[curve.train_size == 0.25].baseline
    assert small.notna().all() and small.nunique() == 1  # one subsample per size, whatever the layer
    printed = format_curve_table(curve).splitlines()
    assert printed[-1].split() == ["majority", num(small.iloc[0]), num(majority)]
    assert "majority" not in format_curve_table(curve.drop(columns="baseline"))  # curve files written before it


@pytest.mark.slow
def test_learning_curves_per_site(site_features, tmp_path):
    import featx
    from featx.report.figures.learning import plot_learning_curves

    result = probe(
        site_features,
        label="label",
        poolings="mean",
        sites="hidden,ffn",
        folds=3,
        jobs=1,
        control=False,
        train_sizes="0.5,1.0",
        curve_layers="1,2",
        n_bootstrap=50,
        output=tmp_path / "r",
    )
    curve = pd.read_csv(result.curve_path)
    assert list(curve.columns[:3]) == ["features", "site", "label"]
    assert set(zip(curve.site, curve.layer, strict=False)) == {
        (site, layer) for site in ("hidden", "ffn") for layer in (1, 2)
    }
    for site in ("hidden", "ffn"):  # the full-size point is the probe's own result for that site and layer
        full = curve[(curve.site == site) & (curve.layer == 2) & (curve.train_size == 1.0)].iloc[0]
        row = result.table[(result.table.site == site) & (result.table.kind == "single") & (result.table.layer == 2)]
        assert full.accuracy == pytest.approx(row.accuracy.iloc[0])
    assert "ffn" in plot_learning_curves(curve, site="ffn").get_title(loc="left")
    assert "ffn" not in plot_learning_curves(curve).get_title(loc="left")  # hidden by default
    with pytest.raises(featx.FeatxError, match="no learning curves for site 'pre_ln'"):
        plot_learning_curves(curve, site="pre_ln")


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("evaluation", ["split", "3-fold cv"])
def test_the_curve_baseline_is_the_tables_baseline_on_the_same_plan(regression, evaluation):
    """One definition of the zero-parameter baseline (``evaluation.baseline_guess``: the training part's majority
    class, or for a number its mean) behind the probe table's reference row and each learning-curve point; on
    the same plan (a split, or folds) the curve's value is the table row's, to the last bit."""
    from featx.probing import evaluation as ev
    from featx.probing.analyses.curve_baselines import curve_baseline
    from featx.probing.evaluation import regression_metrics as rm
    from featx.probing.solvers.ridge import run_mean

    rng = np.random.default_rng(0)
    y = rng.normal(3.0, 1.0, 60) if regression else rng.choice(3, 60, p=[0.5, 0.3, 0.2])
    split = np.array(["train"] * 40 + ["test"] * 20, dtype=object)
    strata = (y > 3).astype(int) if regression else y
    plan = ev.make_plan(strata, split if evaluation == "split" else None, 3, 0, ["a", "b", "c"])
    if regression:
        folds = [run_mean(y, train, test) for train, test in plan.folds]
        assert all(
            np.array_equal(fold.predictions, ev.baseline_guess(y, train, test))
            for fold, (train, test) in zip(folds, plan.folds, strict=True)
        )
        table = rm.summarise(plan, y, folds, 100, 0)["r2"]
        assert curve_baseline(plan, y) == table
    else:
        folds = [ev.run_majority(y, train, test, 3) for train, test in plan.folds]
        assert all(
            np.array_equal(fold.predictions, ev.baseline_guess(y, train, test, 3))
            for fold, (train, test) in zip(folds, plan.folds, strict=True)
        )
        table = ev.summarise(plan, y, folds, 3, 100, 0)["accuracy"]
        assert curve_baseline(plan, y, 3) == table
