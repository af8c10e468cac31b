"""The best row is chosen on the training part, never on the test rows, in the metric the user names
(``--metric``): planted layers where accuracy and macro-F1 disagree, where the best test score is a fluke
of the test rows, and test rows poisoned without moving the choice."""

from __future__ import annotations

import random
from types import SimpleNamespace

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.errors import assert_one_clear_error
from support.tiny import WORDS, write_csv

import featx
from featx.cli import main
from featx.errors import InputError
from featx.probing.results import load_results
from featx.report import format_probe

N_ROWS = 300


def _extract(folder, tiny_model, labels: list[str], split: list[str] | None = None):
    rng = random.Random(0)
    rows = []
    for i, label in enumerate(labels):
        text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 8)))
        rows.append([text, label, f"{rng.uniform(1, 5):.2f}"] + ([split[i]] if split else []))
    header = ("text", "label", "score") + (("split",) if split else ())
    corpus = write_csv(folder / "corpus.csv", rows, header=header)
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


def _write_layers(path, planted: dict[int, np.ndarray], seed: int = 0) -> None:
    """Small noise in every layer's mean pooling, plus ``planted[layer]`` added to its first columns."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "r+") as file:
        dataset = file["pooled"]["mean"]
        data = 0.3 * rng.standard_normal(dataset.shape).astype(np.float32)
        for layer, values in planted.items():
            data[:, layer, : values.shape[1]] += values
        dataset[...] = data.astype(dataset.dtype)


@pytest.fixture(scope="module")
def imbalanced(tiny_model, tmp_path_factory):
    """Three classes, 70% / 20% / 10%. Layer 1 tells a from b, but c looks like b (accuracy 0.90, macro-F1
    0.60); layer 2 tells all three apart, but 45 rows of a look like b (accuracy 0.85, macro-F1 0.87)."""
    codes = np.array([0] * 210 + [1] * 60 + [2] * 30)
    np.random.default_rng(1).shuffle(codes)
    path = _extract(tmp_path_factory.mktemp("imbalanced"), tiny_model, [("a", "b", "c")[c] for c in codes])
    y = codes
    layer1 = 5.0 * np.eye(3)[np.minimum(y, 1)]
    looks = y.copy()
    looks[np.flatnonzero(y == 0)[:45]] = 1
    _write_layers(path, {1: layer1, 2: 5.0 * np.eye(3)[looks]})
    return path


@pytest.mark.slow
def test_metric_changes_the_best_layer(imbalanced, tmp_path):
    common = dict(label="label", jobs=1, n_bootstrap=100, control=False, lexical=False)
    by_accuracy = featx.probe(imbalanced, output=tmp_path / "acc", **common)
    by_f1 = featx.probe(imbalanced, output=tmp_path / "f1", metric="macro_f1", **common)
    singles = by_accuracy.table[by_accuracy.table.kind == "single"].set_index("layer")
    assert singles.accuracy.idxmax() == 1 and singles.macro_f1.idxmax() == 2  # the planted disagreement
    assert by_accuracy.meta["metric"] == "accuracy" and by_f1.meta["metric"] == "macro_f1"
    assert by_accuracy.meta["selected"]["layer"] == 1 and by_f1.meta["selected"]["layer"] == 2
    chosen = by_f1.table[by_f1.table.is_best].iloc[0]
    assert chosen.layer == 2 and chosen.selection_score == pytest.approx(by_f1.meta["selected"]["selection_score"])
    assert by_f1.meta["selected"]["test_score"] == pytest.approx(chosen.macro_f1)
    # the paired tests compare against the chosen row, in the chosen metric
    tested = by_f1.table[by_f1.table.kind == "single"].set_index("layer")
    assert tested.loc[2, "significant_vs_best"] is False and 0 < tested.loc[1, "p_vs_best"] < 1
    # layer 1 against layer 2 in macro-F1 (0.66 against 0.82 with C chosen by log-loss: p 0.14 on these 300 rows), not
    # the accuracy run's test of the same pair
    assert tested.loc[1, "p_vs_best"] != singles.loc[2, "p_vs_best"]
    written, meta = load_results(by_f1.json_path)
    assert meta["metric"] == "macro_f1" and bool(written.loc[written.layer == 2, "is_best"].iloc[0])


def _split_file(folder, tiny_model):
    labels = [("neg", "pos")[i % 2] for i in range(N_ROWS)]
    split = ["test" if i % 3 == 0 else "train" for i in range(N_ROWS)]
    path = _extract(folder, tiny_model, labels, split)
    y, test = np.arange(N_ROWS) % 2, np.asarray(split) == "test"
    return path, 2.0 * y - 1, test


def test_selection_never_sees_the_test_rows(tiny_model, tmp_path):
    """Layer 1 carries a real signal; layer 2 a faint one on the training rows and, poisoned, a perfect one
    on the test rows only: it wins on the test rows, and the choice stays where the training part put it."""
    path, sign, test = _split_file(tmp_path, tiny_model)
    rng = np.random.default_rng(5)
    real = (0.8 * sign + rng.standard_normal(N_ROWS))[:, None]
    faint = (0.25 * sign + rng.standard_normal(N_ROWS))[:, None]
    _write_layers(path, {1: real, 2: faint})
    options = dict(label="label", jobs=1, n_bootstrap=100, lexical=False)
    clean = featx.probe(path, output=tmp_path / "clean", **options)
    poisoned_values = faint.copy()
    poisoned_values[test] = 6.0 * sign[test, None]  # the test rows of layer 2 give their label away
    _write_layers(path, {1: real, 2: poisoned_values})
    poisoned = featx.probe(path, output=tmp_path / "poisoned", **options)

    table = poisoned.table.set_index("layer_spec")
    assert table.loc["2", "accuracy"] > max(0.9, table.loc["1", "accuracy"] + 0.05)  # layer 2 wins on the test rows
    assert bool(table.loc["2", "is_best_on_test"]) and not bool(table.loc["2", "is_best"])
    assert bool(table.loc["1", "is_best"]) and table.loc["1", "selection_score"] > table.loc["2", "selection_score"]
    meta = poisoned.meta
    assert meta["selected"]["layer"] == 1 and meta["best_on_test"]["layer"] == 2
    assert meta["optimism"] == pytest.approx(meta["best_on_test"]["test_score"] - meta["selected"]["test_score"])
    assert meta["optimism"] > 0.1
    # Nothing the choice rests on moved when the test rows changed: the same selection scores and star.
    before, after = clean.table, poisoned.table
    np.testing.assert_array_equal(before.selection_score.to_numpy(), after.selection_score.to_numpy())
    assert before.is_best.tolist() == after.is_best.tolist()
    assert "chosen on the training part" in format_probe(poisoned)
    assert "optimism of choosing on the test rows" in format_probe(poisoned)


def test_reference_rows_take_no_part_in_the_choice(tiny_model, tmp_path):
    path, sign, _ = _split_file(tmp_path, tiny_model)
    _write_layers(path, {1: (0.8 * sign)[:, None]})
    result = featx.probe(path, label="label", jobs=1, n_bootstrap=100, poolings="mean")
    table = result.table
    references = table[table.kind.isin(["majority", "lexical"])]
    assert references.selection_score.isna().all() and not references.is_best.any()
    probes = table[table.kind == "single"]
    assert probes.selection_score.between(0, 1).all()
    assert probes.is_best.sum() == 1 and probes.is_best_on_test.sum() == 1


@pytest.mark.slow
def test_regression_chooses_on_the_training_part_in_its_metric(tiny_model, tmp_path):
    path, _, _ = _split_file(tmp_path, tiny_model)
    with featx.FeatureFile(path) as features:
        score = features.label_values("score")
    target = ((score - score.mean()) / score.std())[:, None]
    _write_layers(path, {2: 2.0 * target})
    result = featx.probe(path, label="score", metric="spearman", jobs=1, n_bootstrap=100, lexical=False)
    table = result.table
    assert result.meta["task"] == "regression" and result.meta["metric"] == "spearman"
    chosen = table[table.is_best].iloc[0]
    assert chosen.layer == 2 and chosen.selection_score > 0.8
    assert result.meta["selected"]["test_score"] == pytest.approx(chosen.spearman)
    assert chosen.selectivity == pytest.approx(chosen.spearman - chosen.control_spearman)
    assert table[table.kind == "baseline"].selection_score.isna().all()


@pytest.mark.parametrize(
    "label, metric, pattern",
    [
        ("label", "r2", r"--metric r2 does not fit this label: 'label' is probed as classes"),
        ("score", "macro_f1", r"--metric macro_f1 does not fit this label: 'score' is probed as a number"),
        ("label", "auc", r"--metric auc is not known"),
    ],
)
def test_a_metric_that_does_not_fit_is_refused_before_any_fit(tiny_model, tmp_path, label, metric, pattern):
    path, _, _ = _split_file(tmp_path, tiny_model)
    with pytest.raises(InputError, match=pattern.replace(f"--metric {metric}", f"metric='{metric}'")):  # keyword
        featx.probe(path, label=label, metric=metric, jobs=1)
    result = CliRunner().invoke(main, ["probe", str(path), "--label", label, "--metric", metric])
    assert result.exit_code == 2
    assert_one_clear_error(result.output, pattern)
    assert not list(tmp_path.glob("*.probe.csv"))  # refused before the work: nothing written


@pytest.mark.slow
def test_word_probes_choose_on_the_training_sentences_in_their_metric():
    from support.planted_words import PlantedWords

    from featx.probing import ProbeConfig
    from featx.probing.tasks.words import probe_words

    config = ProbeConfig(features="planted", write=False, jobs=1, n_bootstrap=100, label="upos", poolings="mean")
    config = ProbeConfig.build(config, metric="macro_f1")
    result = probe_words(config, "planted", [], 0.0, source=PlantedWords(signal={2: 3.0}))
    table, meta = result.table, result.meta
    singles = table[table.kind == "single"].set_index("layer")
    assert meta["metric"] == "macro_f1" and meta["selected"]["layer"] == 2
    assert singles.loc[2, "is_best"] and singles.selection_score.idxmax() == 2
    assert singles.loc[2, "selectivity"] == pytest.approx(
        singles.loc[2, "macro_f1"] - singles.loc[2, "control_macro_f1"]
    )
    assert table[table.kind.isin(["majority", "lexical"])].selection_score.isna().all()


@pytest.mark.parametrize("grouped", [False, True])
def test_paired_test_in_macro_f1_swaps_the_two_predictions_of_a_row_or_group(grouped):
    """Macro-F1 is no sum over rows: the paired permutation test swaps a's and b's predictions of a unit; with
    few differing units every pattern is scored (exact), as scikit-learn's metric scores each."""
    import itertools

    from sklearn.metrics import f1_score

    from featx.probing import evaluation as ev

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 40)
    pred_a = y.copy()
    pred_b = y.copy()
    differing = rng.choice(40, 6, replace=False)  # b wrong on 5 of them, a on 1
    pred_b[differing[:5]] = (y[differing[:5]] + 1) % 3
    pred_a[differing[5:]] = (y[differing[5:]] + 2) % 3
    groups = np.arange(40) // 2 if grouped else np.arange(40)
    plan = ev.Plan("split", [(np.arange(0), np.arange(40))], [None])
    plan.groups = groups  # word plans carry each item's sentence
    p = ev.Scoring("macro_f1", 3).p_value(plan, y, pred_a, pred_b, 300, 7)

    def f1(pred):
        return f1_score(y, pred, average="macro")

    units = np.unique(groups[pred_a != pred_b])
    observed, extreme = f1(pred_a) - f1(pred_b), 0
    for pattern in itertools.product([False, True], repeat=len(units)):
        swap = np.isin(groups, units[list(pattern)])
        difference = f1(np.where(swap, pred_b, pred_a)) - f1(np.where(swap, pred_a, pred_b))
        extreme += abs(difference) >= abs(observed) - 1e-12
    assert p == pytest.approx(extreme / 2 ** len(units)) and 2 / 2 ** len(units) <= p < 1


def test_one_differing_row_is_never_significant_in_any_metric():
    from featx.probing import evaluation as ev

    y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    plan = ev.Plan("split", [(np.arange(0), np.arange(8))], [None])
    for metric in ("accuracy", "macro_f1", "balanced_accuracy"):
        assert ev.Scoring(metric, 3).p_value(plan, y, y, np.r_[y[:7], 2], 2000, 0) == 1.0
    values = np.linspace(0, 1, 8)
    for metric in ("r2", "pearson", "spearman"):
        assert ev.Scoring(metric).p_value(plan, values, values, np.r_[values[:7], 0.3], 2000, 0) == 1.0


def _line_of(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


@pytest.mark.slow
def test_the_printout_follows_the_chosen_metric(imbalanced, tmp_path):
    result = featx.probe(imbalanced, label="label", jobs=1, n_bootstrap=100, metric="macro_f1", output=tmp_path / "m")
    text, table = format_probe(result), result.table
    assert "control macro-F1" in text and "\ncontrol " not in text
    lexical = _line_of(text, "lexical baseline")
    assert "(logreg): macro-F1 " in lexical and "(paired on macro_f1, one test)" in lexical
    assert _line_of(text, "majority class:").startswith("majority class: macro-F1 ")
    chosen = table[table.is_best & (table.kind == "single")].iloc[0]
    row = _line_of(text, f"{chosen.pooling}  {' ' * (len('pooling') - len(chosen.pooling))}{chosen.layer_spec} *")
    assert f"{chosen.control_macro_f1:.3f}" in row and f"{chosen.selectivity:+.3f}" in row


@pytest.mark.slow
def test_the_regression_printout_follows_the_chosen_metric(tiny_model, tmp_path):
    path, _, _ = _split_file(tmp_path, tiny_model)
    result = featx.probe(path, label="score", metric="spearman", jobs=1, n_bootstrap=100)
    text, table = format_probe(result), result.table
    assert "control Spearman" in text and "paired permutation test of Spearman over the test rows" in text
    lexical = _line_of(text, "lexical baseline")
    assert "(ridge): Spearman " in lexical and ", R² " in lexical and "(paired on spearman, one test)" in lexical
    for row in table[table.kind == "single"].itertuples():
        line = next(line for line in text.splitlines() if line.split()[:2] == [row.pooling, str(row.layer_spec)])
        assert f"{row.control_spearman:.3f}" in line.split() or f"{row.control_spearman + 0.0:.3f}" in line


def _fold(y: np.ndarray, right: int) -> SimpleNamespace:
    """A training part's holdout of 20 rows whose probe gets ``right`` of them."""
    rows = np.arange(20)
    return SimpleNamespace(validation=(rows, np.where(rows < right, y[rows], 1 - y[rows])))


def test_selection_scores_equal_but_for_float_rounding_are_equal():
    """Accuracies (0.5, 0.5, 0.65) and (0.55, 0.55, 0.55) both average 0.55, but np.mean gives the first
    0.5499999999999999: the tie went to the later layer, against "ties go to the earliest layer"."""
    from featx.probing import evaluation as ev

    y, scoring = np.zeros(20, dtype=int), ev.Scoring("accuracy", 2)
    early = scoring.selection(y, [_fold(y, 10), _fold(y, 10), _fold(y, 13)])
    late = scoring.selection(y, [_fold(y, 11), _fold(y, 11), _fold(y, 11)])
    assert early == late == 0.55


def test_the_predictions_layer_is_chosen_on_the_training_part_among_their_own_layers():
    """The run's choice is the ffn site's layer 1 (best selection score overall); the predictions file holds the
    hidden mean/logreg layers, whose own choice on the training part is layer 0 (layer 1 is best on the test
    rows): ``predictions_layer`` records 0, never the best on test nor another site's layer."""
    import pandas as pd

    from featx.probing.tasks.base import choice_meta, mark_choices

    rows = [("", "majority", "", "majority", np.nan, 0.5)]
    rows += [("hidden", "single", "0", "mean", 0.8, 0.7), ("hidden", "single", "1", "mean", 0.7, 0.9)]
    rows += [("ffn", "single", "0", "mean", 0.6, 0.6), ("ffn", "single", "1", "mean", 0.95, 0.8)]
    rows += [("hidden", "cat", "cat(0,1)", "mean", 0.99, 0.85)]
    table = pd.DataFrame(rows, columns=["site", "kind", "layer_spec", "pooling", "selection_score", "accuracy"])
    table = table.assign(features="main", classifier=table.kind.map({"majority": "majority"}).fillna("logreg"))
    table["layer"] = pd.to_numeric(table.layer_spec, errors="coerce")
    table = mark_choices(table, "accuracy", ("majority",))
    meta = choice_meta(table, "accuracy", "mean/logreg")
    assert meta["selected"]["site"] == "ffn" and meta["predictions_layer"] == "0"
    assert choice_meta(table, "accuracy", "cls/logreg")["predictions_layer"] is None  # no such rows
    assert choice_meta(table, "accuracy")["predictions_layer"] is None  # no predictions written
    no_scores = mark_choices(table.assign(selection_score=np.nan), "accuracy", ("majority",))
    assert choice_meta(no_scores, "accuracy", "mean/logreg")["predictions_layer"] is None


def test_a_baseline_is_tested_against_the_chosen_site_when_the_run_has_no_hidden_states():
    """``--site ffn`` alone: the lexical baseline's paired test looked among hidden-state rows only, found none,
    and printed "no layer to compare with"; it is tested against the chosen row of the sites the run probed."""
    import pandas as pd

    from featx.probing import baseline_rivals
    from featx.report.text.probe import versus_best

    def rows(sites):
        return pd.DataFrame(
            {
                "features": "main",
                "kind": "single",
                "site": [site for site in sites for _ in range(2)],
                "layer": [0, 1] * len(sites),
                "layer_spec": ["0", "1"] * len(sites),
                "pooling": "mean",
                "classifier": "logreg",
                "accuracy": [0.6, 0.8] * len(sites),
                "is_best": [False, True] * len(sites),
                "selection_score": [0.55, 0.75] * len(sites),
            }
        )

    both = rows(["hidden", "ffn"])
    assert set(baseline_rivals(both).site) == {"hidden"}  # the hidden states, as before
    ffn = rows(["ffn"])
    assert baseline_rivals(ffn).equals(ffn)
    lexical = SimpleNamespace(accuracy=0.7, p_vs_best=0.02, significant_vs_best=True)
    text = versus_best(lexical, ffn, "accuracy")
    assert text.startswith("vs the best layer (site ffn mean 1, logreg) p=0.02")
    assert text.endswith("the baseline is behind the layer by 0.100")
