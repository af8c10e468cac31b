"""Structural probes (``featx probe --structural``): trees from heads, the spanning tree, the paper's four measures
against hand computations, folds over whole sentences, a probe that finds planted trees, and bad input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner
from support.planted_trees import PlantedTrees

import featx
from featx.cli import main
from featx.errors import InputError
from featx.probing import structural_probe
from featx.probing.config import ProbeConfig
from featx.probing.tasks.structural_plan import read_trees, sentence_folds
from featx.probing.tasks.structural_trees import (
    complete_tree,
    depth_stats,
    distance_stats,
    scores,
    spanning_edges,
    tree_depths,
    tree_distances,
)
from featx.report import format_structural, load_structural
from featx.report.html.structural import choice_note


def test_tree_distances_and_depths_from_heads():
    heads = np.array([1, -1, 1, 2])  # 0 <- 1 (root) -> 2 -> 3
    assert tree_depths(heads).tolist() == [1, 0, 1, 2]
    assert tree_distances(heads).tolist() == [[0, 1, 2, 3], [1, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]]
    assert complete_tree(heads)
    for broken in ([1, -1, 3, 2], [-1, -1, 1], [1, -1, 7], [1, 0, 1]):  # a cycle, two roots, outside, no root
        assert not complete_tree(np.array(broken))


def _tree_weight(weights, edges):
    return sum(weights[i, j] for i, j in edges)


def _brute_force_minimum(weights):
    """The least total weight over every spanning tree of the complete graph (each from a Prüfer sequence)."""
    n = len(weights)
    best = np.inf
    for code in itertools.product(range(n), repeat=n - 2):
        degree = [1] * n
        for node in code:
            degree[node] += 1
        edges = []
        for node in code:
            leaf = min(i for i in range(n) if degree[i] == 1)
            edges.append((leaf, node))
            degree[leaf] -= 1
            degree[node] -= 1
        last = [i for i in range(n) if degree[i] == 1]
        edges.append((last[0], last[1]))
        best = min(best, _tree_weight(weights, edges))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_spanning_tree_is_a_minimum_one(seed):
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0, 5, (5, 5))
    weights = (weights + weights.T) / 2
    weights[0, 3] = weights[3, 0] = 0.0  # a zero distance is still an edge
    np.fill_diagonal(weights, 0.0)
    edges = spanning_edges(weights)
    assert len(edges) == 4 and all(i < j for i, j in edges)
    assert (0, 3) in edges
    assert _tree_weight(weights, edges) == pytest.approx(_brute_force_minimum(weights))


# A chain 0 - 1 - 2 - 3 rooted at 0, and a punctuation word 4 under 3 that no score may see.
CHAIN = np.array([-1, 0, 1, 2, 3])
KEEP = np.array([True, True, True, True, False])


def test_uuas_and_dspr_against_hand_computations():
    gold = tree_distances(CHAIN).astype(float)
    predicted = gold.copy()
    predicted[1, 3] = predicted[3, 1] = 0.5  # the spanning tree takes 1-3 for 2-3: 2 gold edges of 3
    predicted[4, :] = predicted[:, 4] = 0.01  # punctuation: would join everything if it were scored
    predicted[4, 4] = 0.0
    first = distance_stats(predicted, gold, KEEP)
    # word Spearmans by hand: rows 0 and 2 agree (1), row 1: 1/3, row 3: 0.8
    assert first == pytest.approx((5, 2, 3, 1 + 1 / 3 + 1 + 0.8, 4))
    perfect = tree_distances(np.array([-1, 0, 0, 1, 1, 2])).astype(float)
    second = distance_stats(perfect, perfect, np.ones(6, bool))
    assert second[1:3] == (5.0, 5.0)
    uuas, dspr = scores(np.array([first, second]))
    assert uuas == pytest.approx(7 / 8)
    assert dspr == pytest.approx(((1 + 1 / 3 + 1 + 0.8) / 4 + 1) / 2)  # mean per length (5 and 6), then over them


def test_root_accuracy_and_nspr_against_hand_computations():
    gold = tree_depths(CHAIN).astype(float)
    first = depth_stats(np.array([0.5, 0.2, 2, 3, -1.0]), gold, KEEP)  # smallest kept: word 1, not the root
    assert first == pytest.approx((5, 0, 1, 0.8, 1))
    second = depth_stats(np.arange(6.0), np.arange(6.0), np.ones(6, bool))
    assert scores(np.array([first, second])) == pytest.approx((0.5, 0.9))
    short = depth_stats(np.arange(3.0), np.arange(3.0), np.ones(3, bool))  # length 3: outside NSpr's 5 to 50
    assert np.isnan(scores(np.array([short]))[1]) and scores(np.array([short]))[0] == 1.0


def _random_stats(rng, n: int, low: int, high: int, perfect: bool) -> np.ndarray:
    """``n`` sentences' stats rows of ``low`` to ``high - 1`` words, every edge found and rho 1 when ``perfect``."""
    rows = []
    for length in rng.integers(low, high, n).tolist():
        total = length - 1
        hits = total if perfect else int(rng.integers(0, total + 1))
        rho = np.ones(length) if perfect else rng.uniform(-1, 1, length)
        rows.append((length, hits, total, rho.sum(), length))
    return np.asarray(rows, np.float64).reshape(-1, 5)


@pytest.mark.parametrize("perfect", [False, True], ids=["random", "exactly 1"])
@pytest.mark.parametrize("n", [1, 2, 3, 8])
@pytest.mark.parametrize("lengths", [(2, 3), (2, 8), (5, 9)], ids=["all 2 words", "mixed", "5 to 8 words"])
def test_intervals_hold_their_point_or_are_absent(n, lengths, perfect):
    """Over few sentences, short ones (outside DSpr's 5 to 50 words) and scores of exactly 1 (or 0): each interval
    lies in the measure's range around its point, or is NaN, never a zero-width interval resampled from one
    sentence (UUAS, DSpr) and never with a warning."""
    import warnings

    from featx.probing.tasks.structural_trees import bootstrap_scores

    stats = _random_stats(np.random.default_rng(n), n, *lengths, perfect)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        points, bounds = scores(stats), bootstrap_scores(stats, 200, 0)
    counted = [int((stats[:, 2] > 0).sum()), int(((stats[:, 0] >= 5) & (stats[:, 4] > 0)).sum())]
    for point, (low, high), bound, units in zip(points, bounds, (0.0, -1.0), counted, strict=True):
        if np.isnan(point) or units < 2:
            assert np.isnan(low) and np.isnan(high)  # no value, or one sentence to resample: no interval
            continue
        assert bound <= low <= point <= high <= 1.0
    zero = stats.copy()
    zero[:, 1] = 0  # no edge found: UUAS exactly 0
    uuas, (low, high) = scores(zero)[0], bootstrap_scores(zero, 200, 0)[0]
    assert uuas == 0.0 and ((low, high) == (0.0, 0.0) if counted[0] >= 2 else np.isnan(low))


@pytest.mark.parametrize("mode", ["distance", "depth"])
def test_a_measure_without_a_value_or_an_interval_says_why(mode, tmp_path):
    """Two-word sentences only, one of them tested: DSpr/NSpr have no value (no sentence of 5 to 50 words) and
    UUAS/root accuracy no interval (one test sentence); the notes say both, the rows hold NaN, not [x, x]."""
    source = PlantedTrees(n_sentences=8, lengths=(2, 3))
    source.split = np.array(["train"] * 7 + ["test"], dtype=object)
    output = tmp_path / "short"
    result = structural_probe("planted", source=source, structural=mode, poolings="mean", output=output, jobs=1)
    first, second = {"distance": ("uuas", "dspr"), "depth": ("root_accuracy", "nspr")}[mode]
    table = result.table
    assert table[first].notna().all() and table[f"{first}_low"].isna().all() and table[f"{first}_high"].isna().all()
    assert table[[second, f"{second}_low", f"{second}_high"]].isna().all().all()
    shown = {"uuas": "UUAS", "root_accuracy": "root accuracy", "dspr": "DSpr", "nspr": "NSpr"}
    assert any(
        note.startswith(f"{shown[first]}: no 95% interval") and "1 test sentence" in note for note in result.notes
    )
    assert any(note.startswith(f"{shown[second]}: no value") and "5 to 50 words" in note for note in result.notes)
    assert result.meta["notes"] == result.notes
    if mode == "depth":  # chosen in NSpr, which no held-out sentence scores: the printout says why and what to do
        printed = format_structural(result)
        assert (
            "no layer could be chosen" in printed and "5 to 50 words" in printed and "--structural distance" in printed
        )
        assert "5 to 50 words" in choice_note(load_structural(result.json_path))  # and so does featx report


@pytest.mark.parametrize("split", [True, False])
def test_no_training_sentence_of_a_fold_is_a_test_sentence(split):
    source = PlantedTrees(n_sentences=30, split=split)
    tree = read_trees(source, "distance", [])
    values = None if source.split is None else source.split[tree.rows]
    plan = sentence_folds(values, len(tree.rows), 4, 0, [])
    assert plan.evaluation == ("split" if split else "4-fold cv")
    tested = np.zeros(len(tree.rows), int)
    for (train, test), (fit, held) in zip(plan.folds, plan.holdouts, strict=True):
        assert not set(train) & set(test) and len(held) and len(fit)
        assert not set(fit) & set(held) and set(fit) | set(held) == set(train)
        tested[test] += 1
    if split:
        assert set(tree.rows[plan.folds[0][1]]) == set(np.flatnonzero(source.split == "test"))
    else:
        assert np.all(tested == 1)


@pytest.mark.parametrize("mode", ["distance", "depth"])
def test_a_probe_reads_planted_trees_exactly(mode, tmp_path):
    source, output = PlantedTrees(), tmp_path / f"planted.{mode}.structural"
    result = structural_probe(
        "planted", source=source, structural=mode, poolings="mean", output=output, jobs=1, n_bootstrap=50
    )
    table, first = result.table, {"distance": "uuas", "depth": "root_accuracy"}[mode]
    exact, noise = (table[(table.kind == "probe") & (table.layer == layer)].iloc[0] for layer in (1, 0))
    assert exact[first] == 1.0 and exact.is_best and noise[first] < 0.9
    assert table.kind.iloc[0] == {"distance": "chain", "depth": "position"}[mode]
    assert any("rank 64 is above" in line for line in result.notes)
    assert result.meta["selected"]["layer"] == 1
    printed = format_structural(result)
    assert "baseline" in printed
    assert "selection  epochs" in printed and "select." not in printed  # not the selectivity of the label probes
    read = load_structural(result.csv_path)  # the files featx plot and featx report read back
    assert read.mode == mode and len(read.probes) == 2 and read.chosen["layer"] == 1
    assert read.baseline[first] == table[first].iloc[0]


def test_heads_that_are_not_a_tree_are_skipped_and_counted():
    source = PlantedTrees(n_sentences=30)
    source.heads[source.offsets[2] : source.offsets[3]] = -1  # unknown heads
    notes: list[str] = []
    tree = read_trees(source, "depth", notes)
    assert 2 not in tree.rows and len(tree.rows) == 29 and "1 sentence(s) skipped" in notes[0]
    source.heads[:] = -1
    with pytest.raises(InputError, match="no sentence .* has a complete dependency tree"):
        read_trees(source, "distance", [])


def test_bad_structural_options_are_refused():
    with pytest.raises(InputError, match="--rank"):
        ProbeConfig(features="x.h5", structural="distance", rank=0)
    with pytest.raises(InputError, match="--rank applies"):
        ProbeConfig(features="x.h5", rank=8)
    with pytest.raises(InputError, match="not a label"):
        ProbeConfig(features="x.h5", structural="depth", label="upos")
    with pytest.raises(InputError, match="--mdl, --classifier"):
        ProbeConfig(features="x.h5", structural="depth", classifiers="mlp", mdl=True)
    with pytest.raises(InputError, match="structural_probe"):
        featx.probe("x.h5", structural="distance")


def test_a_sentence_level_file_is_refused(tiny_features, tmp_path):
    with pytest.raises(InputError, match="no word-level data"):
        structural_probe(tiny_features, structural="distance", write=False, jobs=1)


def test_the_command_writes_its_table(word_features, tmp_path):
    features, _ = word_features
    prefix = tmp_path / "toy.depth"
    args = [str(features), "--structural", "depth", "--layer", "0", "--pooling", "mean", "--jobs", "1"]
    args += ["-o", str(prefix)]
    result = CliRunner().invoke(main, ["probe", *args])
    assert result.exit_code == 0, result.output
    assert "position" in result.output and "root acc." in result.output
    written = json.loads((tmp_path / "toy.depth.json").read_text())
    assert written["meta"]["structural"] == "depth" and written["meta"]["evaluation"] == "split"
    assert {row["kind"] for row in written["results"]} == {"position", "probe"}
    assert (tmp_path / "toy.depth.csv").exists()


@pytest.mark.slow
def test_the_run_is_remembered_for_plot_and_report(word_features, tmp_path, monkeypatch):
    features, _ = word_features
    monkeypatch.chdir(tmp_path)
    args = [str(features), "--structural", "distance", "--layer", "0", "--pooling", "mean", "--jobs", "1"]
    assert CliRunner().invoke(main, ["probe", *args, "-o", "toy.distance"]).exit_code == 0
    last = json.loads((tmp_path / ".featx" / "last.json").read_text())
    assert last["results"].endswith("toy.distance.csv")
    plotted = CliRunner().invoke(main, ["plot"])  # no path: the structural run just written
    assert plotted.exit_code == 0, plotted.output
    assert "using the last probing run" in plotted.output and (tmp_path / "toy.distance.png").exists()
    explained = CliRunner().invoke(main, ["explain"])  # per-example diagnostics are not a structural measure
    assert explained.exit_code != 0 and "Traceback" not in explained.output, explained.output
    assert "structural" in explained.output
