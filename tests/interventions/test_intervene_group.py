"""``featx intervene --group COLUMN`` (rows planted in groups, ``support.planted_groups``): the probes read before
and after the edit fold, hold out and resample whole groups, so does INLP's holdout, the meta records the column, and
a bad group column is refused before any forward pass, with ``featx probe --group``'s messages."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import featx.probing
from featx.cli import main
from featx.errors import InputError
from featx.interventions import InterveneConfig, intervene
from featx.probing import evaluation
from featx.probing.evaluation import core

QUICK = dict(label="label", at="1", amnesic="none", loss="no", n_bootstrap=200, write=False)


@pytest.mark.slow
def test_the_probes_and_inlp_keep_groups_whole(grouped_file, monkeypatch):
    folds, holdouts = [], []
    original_fits, original_split = evaluation.run_linear_tasks, evaluation.inner_split

    def fits(name, X, labels, train, test, dev, n_classes, cs, balanced, seed, groups=None):
        folds.append((train, test, groups))
        return original_fits(name, X, labels, train, test, dev, n_classes, cs, balanced, seed, groups)

    def split(y, rows, seed, groups=None):
        fit, val = original_split(y, rows, seed, groups)
        holdouts.append((fit, val, groups))
        return fit, val

    monkeypatch.setattr(featx.probing, "run_linear_tasks", fits)  # what interventions.probes imports
    monkeypatch.setattr(evaluation, "inner_split", split)  # INLP's holdout
    monkeypatch.setattr(core, "inner_split", split)  # the probes' C search
    result = intervene(grouped_file, method="inlp", group="doc", **QUICK)
    assert len(folds) == 5 * 3 * 2  # before, after, control at layers 1 and 2, five folds each
    for train, test, groups in folds:
        assert groups is not None and len(np.unique(groups)) == 24
        assert not len(np.intersect1d(groups[train], groups[test]))
    assert len(holdouts) > len(folds)  # the C searches and INLP's
    for fit, val, groups in holdouts:
        assert groups is not None and not len(np.intersect1d(groups[fit], groups[val]))
    assert (result.meta["group"], result.meta["n_groups"]) == ("doc", 24)
    assert any("group='doc' (24 groups)" in note for note in result.notes)


@pytest.mark.parametrize(
    ("path", "group", "message"),
    [
        ("grouped", "topic", "group='topic': no label column 'topic' in .*; label columns: label, doc, score, partial"),
        ("grouped", "label", "group='label' is the label probed"),
        ("leaky", "doc", "1 group\\(s\\) have rows in both the train and the test split, e.g. 'd1'"),
    ],
)
def test_a_bad_group_is_refused_before_any_forward_pass(
    grouped_file, leaky_split_file, no_forward, path, group, message
):
    with pytest.raises(InputError, match=message):
        intervene(grouped_file if path == "grouped" else leaky_split_file, group=group, **QUICK)


def test_steering_takes_a_group_for_its_folds_and_intervals():
    """``--edit steer``'s class-mean direction is cross-fitted on folds of whole groups without a split, and its
    intervals take the groups as units (tests/interventions/test_intervene_steer_rows.py)."""
    steer = InterveneConfig(features="x.h5", edit="steer", toward="pos", at="1", bundle="b.featx", group="doc")
    assert steer.group == "doc"
    assert InterveneConfig(features="x.h5", label="label", at="1", group="doc").group == "doc"
    with pytest.raises(InputError, match="--group label is the label probed"):
        InterveneConfig(features="x.h5", label="label", at="1", group="label")


def test_the_cli_lists_the_flag():
    assert "--group" in CliRunner().invoke(main, ["intervene", "--help"]).output


def _recorded(monkeypatch, module, name: str) -> list:
    """The arguments of every call of ``module.name`` (still called)."""
    calls: list = []
    original = getattr(module, name)

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, record)
    return calls


def _drift(result) -> list[tuple[float, float, float]]:
    row = result.table[result.table.role == "drift"].iloc[0]
    return [(row[key], row[f"{key}_low"], row[f"{key}_high"]) for key in ("after", "control")]


@pytest.mark.slow  # two runs of the experiment (~3 s)
def test_the_drift_is_read_by_whole_groups_and_a_row_without_a_group_is_its_own(grouped_file, tmp_path, monkeypatch):
    import shutil

    import h5py

    from featx.interventions import outputs, stats

    path = tmp_path / "unlabelled.features.h5"
    shutil.copy(grouped_file, path)
    with h5py.File(path, "r+") as file:
        file["labels/label"][15] = -1  # the row 'partial' leaves without a group, unlabelled: not refused
    calls = _recorded(monkeypatch, outputs, "mean_interval")
    grouped = intervene(path, group="partial", **QUICK)
    plain = intervene(path, **QUICK)
    documents = np.repeat(np.arange(24), 5)
    expected = documents.copy()
    expected[15] = 24  # alone, beside d3's other four rows
    for (values, groups), got in zip(((call[0][0], call[0][1]) for call in calls[:2]), _drift(grouped), strict=True):
        assert np.array_equal(groups[:, None] == groups[None, :], expected[:, None] == expected[None, :])
        assert got == stats.mean_interval(values, expected)
        rowwise = stats.mean_interval(values)
        assert got[0] == rowwise[0] and got[1:] != rowwise[1:]  # the same mean, another interval
    assert any(
        "(25 groups over the file's 120 rows, 1 row(s) without a group each one of its own)" in note
        for note in grouped.notes
    )
    for (values, groups), got in zip(((call[0][0], call[0][1]) for call in calls[2:]), _drift(plain), strict=True):
        assert groups is None and got == stats.mean_interval(values)
    assert not any("take the groups of" in note for note in plain.notes)


class _Bundle:
    """A bundle of 'label' at layer 1 that predicts what its planted predictions say for each pass's matrix."""

    label, layers, pooling, classes = "label", [1], "mean", ["neg", "pos"]
    spec = type("Spec", (), {"kind": "single"})()

    def __init__(self, predictions: dict):
        self.predictions = predictions

    def predict_features(self, matrix):
        return self.predictions[float(matrix[0, 0])]


def _pass(tag: float, n: int = 120):
    from types import SimpleNamespace

    return SimpleNamespace(array=lambda layer, pooling: np.full((n, 2), tag), rows=np.arange(n))  # every row


def test_the_bundle_rows_share_by_whole_groups(grouped_file):
    from types import SimpleNamespace

    from featx.interventions.outputs import bundle_rows
    from featx.interventions.stats import share_interval
    from featx.store import open_features

    with open_features(grouped_file) as features:
        truth = np.asarray(features.label_names("label"), dtype=object)[features.labels("label")]
    documents = np.repeat(np.arange(24), 5)
    rng = np.random.default_rng(0)
    flipped = (rng.random(24) < 0.3)[documents]  # the edit flips whole documents
    after = np.where(flipped, np.where(truth == "pos", "neg", "pos"), truth).astype(object)
    control = np.where(rng.random(120) < 0.05, np.where(truth == "pos", "neg", "pos"), truth).astype(object)
    bundle = _Bundle({0.0: truth, 1.0: after, 2.0: control})
    rows = {}
    for groups in (documents, None):
        plan = SimpleNamespace(bundle=bundle, features=grouped_file, row_groups=groups)
        rows[groups is None] = bundle_rows(plan, _pass(0.0), _pass(1.0), _pass(2.0))
    grouped, plain = rows[False], rows[True]
    assert [row["name"] for row in grouped] == ["label bundle: flipped", "label bundle: accuracy"]
    for key, hits in (("after", after != truth), ("control", control != truth)):
        got = (grouped[0][key], grouped[0][f"{key}_low"], grouped[0][f"{key}_high"])
        assert got == share_interval(hits, groups=documents)
        assert (plain[0][key], plain[0][f"{key}_low"], plain[0][f"{key}_high"]) == share_interval(hits)
    assert grouped[0]["after_high"] - grouped[0]["after_low"] > 1.5 * (plain[0]["after_high"] - plain[0]["after_low"])
    assert (grouped[1]["after"], grouped[1]["after_low"]) == share_interval(after == truth, groups=documents)[:2]
    assert (plain[1]["after"], plain[1]["after_low"]) == share_interval(after == truth)[:2]


def test_the_loss_and_its_paired_tests_by_whole_groups(monkeypatch):
    from types import SimpleNamespace

    from scipy import stats as scipy_stats

    from featx.interventions import loss
    from featx.interventions.stats import mean_interval, paired_p_value

    documents = np.repeat(np.arange(12), 5)
    rng = np.random.default_rng(1)
    base = 3 + rng.standard_normal(12)[documents] + 0.1 * rng.standard_normal(60)
    after = base + 0.3 + 0.5 * rng.standard_normal(12)[documents] + 0.05 * rng.standard_normal(60)
    control = base + 0.02 * rng.standard_normal(60)
    folds = np.arange(60) % 3  # each row's loss read on its own fold's edit (and control): garbage on another's
    passes = {(): base, **{(f"e{k}",): np.where(folds == k, after, 99.0) for k in range(3)}}
    passes.update({(f"c{k}",): np.where(folds == k, control, -99.0) for k in range(3)})

    def row_losses(plan, forward, head, maps=(), rows=None):
        return passes[tuple(maps)][slice(None) if rows is None else rows]

    monkeypatch.setattr(loss, "row_losses", row_losses)
    held = {k: np.flatnonzero(folds == k) for k in range(3)}
    edits = SimpleNamespace(
        measured=np.arange(60), held=held, erasers={k: f"e{k}" for k in held}, controls={k: f"c{k}" for k in held}
    )
    records = {}
    for groups in (documents, None):
        plan = SimpleNamespace(row_groups=groups, provenance=SimpleNamespace(causal=False), stored_layers=(0, 1, 2))
        records[groups is None] = loss.loss_row(plan, None, loss.LMHead(None, ""), edits)
    grouped, plain = records[False], records[True]
    for key, values in (("before", base), ("after", after), ("control", control)):
        assert (grouped[key], grouped[f"{key}_low"], grouped[f"{key}_high"]) == mean_interval(values, documents)
        assert (plain[key], plain[f"{key}_low"], plain[f"{key}_high"]) == mean_interval(values)
    assert grouped["p_after"] == paired_p_value(after, base, documents)
    assert grouped["p_control"] == paired_p_value(after, control, documents)
    assert plain["p_after"] == scipy_stats.ttest_rel(after, base).pvalue  # as before --group existed
    assert grouped["p_after"] > 10 * plain["p_after"]


def test_steering_read_through_the_answers_takes_a_group():
    config = InterveneConfig(
        features="x.h5",
        edit="steer",
        toward="pos",
        at="1",
        template="Review: {text} Sentiment:",
        answers=" good, bad",
        group="doc",
    )
    assert config.group == "doc"
