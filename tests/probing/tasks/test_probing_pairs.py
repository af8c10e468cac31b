"""Pair probes (featx/probing/pairs.py): the SentEval feature, the cosine baseline and its thresholds."""

import itertools

import numpy as np
import pytest
from support.shared_files import pair_corpus

import featx
from featx.extraction import ExtractConfig, extract
from featx.probing import evaluation as ev
from featx.probing.tasks.pairs import (
    cosine,
    cosine_baseline,
    fit_thresholds,
    pooled_block,
    predict_thresholds,
    senteval,
)
from featx.report import format_probe


def test_senteval_feature_is_u_v_absolute_difference_and_product():
    u = np.array([[1.0, -2.0], [0.5, 3.0]])
    v = np.array([[3.0, 1.0], [-0.5, 2.0]])
    expected = np.array([[1, -2, 3, 1, 2, 3, 3, -2], [0.5, 3, -0.5, 2, 1, 1, -0.25, 6]], dtype=float)
    np.testing.assert_array_equal(senteval(u, v), expected)


def test_cosine_matches_a_hand_computation():
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    by_hand = [float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(u, v, strict=False)]
    np.testing.assert_allclose(cosine(u, v), by_hand, rtol=1e-12)
    assert cosine(np.zeros((1, 3)), np.ones((1, 3)))[0] == 0.0


def _brute_force(values, y, n_classes):
    """Best accuracy of any ordered thresholds with any class order, trying every cut between distinct values."""
    cuts = np.unique(values)
    candidates = [-np.inf] + list((cuts[1:] + cuts[:-1]) / 2) + [np.inf]
    best = 0.0
    for order in itertools.permutations(range(n_classes)):
        for thresholds in itertools.combinations_with_replacement(candidates, n_classes - 1):
            predicted = np.asarray(order)[np.searchsorted(np.asarray(thresholds), values, side="right")]
            best = max(best, float((predicted == y).mean()))
    return best


@pytest.mark.parametrize("n_classes, seed", [(2, 0), (2, 1), (3, 2), (3, 3)])
def test_thresholds_reach_the_best_training_accuracy(n_classes, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=40)
    values = np.round(y * 0.4 + rng.normal(scale=0.5, size=40), 1)  # rounded: ties must stay on one side
    order, thresholds = fit_thresholds(values, y, n_classes)
    accuracy = float((predict_thresholds(values, order, thresholds) == y).mean())
    assert accuracy == pytest.approx(_brute_force(values, y, n_classes))


def test_thresholds_are_chosen_on_the_training_part_only():
    """Test rows whose labels contradict the training rows' relation get a low accuracy: they were not used."""
    from featx.probing.tasks.pairs import cosine_class_scores

    score = np.r_[np.linspace(0, 1, 20), np.linspace(0, 1, 20)]
    y = np.r_[(np.linspace(0, 1, 20) > 0.5).astype(int), (np.linspace(0, 1, 20) <= 0.5).astype(int)]
    plan = ev.Plan("split", [(np.arange(20), np.arange(20, 40))], [None])
    assert cosine_class_scores(score, y, plan, 2, 200, 0)["accuracy"] == 0.0


def test_probe_reads_the_senteval_feature_of_a_separate_file(pair_features):
    with featx.open(pair_features) as features:
        u, v = features.pair_features("mean", 1)
        np.testing.assert_array_equal(pooled_block(features, "mean", 1), senteval(u, v))
        np.testing.assert_array_equal(pooled_block(features, "mean", 1, site="pair_b"), v)


def test_regression_baseline_is_spearman_of_the_cosine_on_the_test_rows(pair_features):
    from scipy.stats import pearsonr, spearmanr

    with featx.open(pair_features) as features:
        y = features.label_values("score")
        split = np.asarray(features.split)
        u, v = (side.astype(np.float64) for side in features.pair_features("cls", 2))
    kept = np.arange(len(y))
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    plan = ev.Plan("split", [(train, test)], [None])
    rows = cosine_baseline(pair_features, kept, y, plan, [2], ["cls"], None, 200, 0)
    by_hand = [
        float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(u[test], v[test], strict=False)
    ]
    assert rows[0]["spearman"] == pytest.approx(spearmanr(by_hand, y[test]).statistic)
    assert rows[0]["pearson"] == pytest.approx(pearsonr(by_hand, y[test]).statistic)
    assert rows[0]["spearman_low"] <= rows[0]["spearman"] <= rows[0]["spearman_high"]


@pytest.mark.slow
def test_the_report_and_printout_show_the_cosine_not_the_probe(pair_features, tmp_path):
    """The cosine rows of a regression pair run (printout, JSON, the report's table) are cos(u, v)'s own
    Spearman on the test rows, computed here by hand, and not the ridge probe's Spearman of the same cell."""
    from scipy.stats import spearmanr

    from featx.report.html.page import render
    from featx.report.html.sections import cosine_table

    result = featx.probe(pair_features, label="score", poolings="mean", jobs=1, output=tmp_path / "score.probe.csv")
    with featx.open(pair_features) as features:
        y, split = features.label_values("score"), np.asarray(features.split)
        sides = {layer: features.pair_features("mean", layer) for layer in (0, 1, 2)}
    test = split == "test"
    shown = cosine_table(result.meta)
    probes = result.table[(result.table.kind == "single") & (result.table.pooling == "mean")]
    page, text = render(result.csv_path), format_probe(result)
    differs = 0
    for layer, (u, v) in sides.items():
        by_hand = spearmanr(cosine(u.astype(np.float64), v.astype(np.float64))[test], y[test]).statistic
        cell = shown[(shown.pooling == "mean") & (shown.layer == str(layer))].iloc[0]
        assert cell["Spearman rho"].startswith(f"{by_hand:.3f} [")
        assert f"mean     {layer}      {by_hand:.3f} [" in text
        probe = float(probes[probes.layer == layer].spearman.iloc[0])
        differs += f"{probe:.3f}" != f"{by_hand:.3f}"
    assert differs >= 2  # the probe's own values are elsewhere: the cosine rows do not copy them
    assert "Cosine baseline (sentence pairs)" in page


@pytest.mark.slow
@pytest.mark.parametrize("label", ["score", "same"])
def test_every_pair_table_starts_with_the_cosine_baseline(pair_features, tmp_path, label):
    result = featx.probe(
        pair_features, label=label, layers="all", poolings="mean,cls", jobs=1, output=tmp_path / f"{label}.probe.csv"
    )
    rows = result.meta["cosine_baseline"]
    assert result.meta["pair_mode"] == "separate"
    assert [(row["pooling"], row["layer"]) for row in rows] == [
        (p, layer) for p in ("mean", "cls") for layer in (0, 1, 2)
    ]
    text = format_probe(result)
    assert text.index("cosine baseline") < text.index("probe\n")
    assert ("Spearman" if label == "score" else "accuracy of thresholds") in text
    from featx.report.figures.curves import plot_layer_curves

    ax = plot_layer_curves(result.table, result.meta, metric="spearman" if label == "score" else "accuracy")
    drawn = [line for line in ax.get_lines() if line.get_label().startswith("cosine baseline by layer")]
    assert len(drawn) == 1 and list(drawn[0].get_xdata()) == [0, 1, 2]


def test_cross_mode_files_probe_like_any_file_with_segment_poolings(tiny_model, tmp_path):
    summary = extract(
        ExtractConfig(
            corpus=pair_corpus(tmp_path / "pairs.csv"),
            output=tmp_path / "cross.h5",
            model=str(tiny_model),
            text_col="a",
            text_pair_col="b",
            progress=False,
        )
    )
    result = featx.probe(
        summary.output, label="same", layers="1", poolings="mean_a,mean_b", jobs=1, output=tmp_path / "cross.probe.csv"
    )
    assert set(result.table.pooling) >= {"mean_a", "mean_b"} and "cosine_baseline" not in result.meta
    assert result.meta["pair_mode"] == "cross"


@pytest.mark.parametrize("command", ["probe", "fit"])
def test_a_segment_pooling_of_a_separate_pair_file_is_refused_with_the_hint(pair_features, tmp_path, command):
    """--pooling mean_a of a separate-mode file said only "not available": it now says mean_a is a cross-encoded
    pair's, and that this file's probes read both texts (or text b alone with --site pair_b)."""
    from click.testing import CliRunner
    from support.errors import assert_one_clear_error

    from featx.cli import main

    args = [command, str(pair_features), "--label", "score", "--pooling", "mean_a", "-o", str(tmp_path / "out")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert_one_clear_error(result.output, "pooling 'mean_a' is not available")
    assert "--pair-mode cross" in result.output and "--site pair_b" in result.output


def test_one_text_analyses_refuse_a_separate_pair_file(pair_features):
    from featx.errors import InputError
    from featx.probing.analyses.erase import erase
    from featx.probing.analyses.neurons import neurons

    with pytest.raises(InputError, match="sentence pairs encoded separately"):
        neurons(pair_features, label="same", layers="1")
    with pytest.raises(InputError, match="sentence pairs encoded separately"):
        erase(pair_features, label="same", layers="1")


def test_sweep_reads_the_senteval_feature_of_a_separate_file(pair_features, monkeypatch):
    from featx.probing.analyses import sweep

    widths = []
    real = sweep.probe_family
    monkeypatch.setattr(sweep, "probe_family", lambda width, n_classes: widths.append(width) or real(width, n_classes))
    with featx.open(pair_features) as features:
        hidden = features.hidden_size
        task = sweep.load_task(features, "same", 3, 0)
    sweep.sweep_layer(str(pair_features), "mean", 1, task, None, 0, 50)
    assert widths == [4 * hidden]


def test_explain_of_a_pair_run_shows_both_texts(pair_features, tmp_path):
    from featx.probing.analyses.explain import explain

    result = featx.probe(pair_features, label="score", poolings="mean", jobs=1, output=tmp_path / "score.probe.csv")
    found = explain(result.csv_path, write=False)
    with featx.open(pair_features) as features:
        first, second = features.texts, features.pair_texts
    rows = found.largest
    assert {"text", "text_b"} <= set(rows.columns)
    by_id = dict(zip(rows["id"].astype(str), zip(rows["text"], rows["text_b"], strict=True), strict=True))
    assert all(pair in set(zip(first, second, strict=True)) for pair in by_id.values())
    assert "text_b" in found.format()
