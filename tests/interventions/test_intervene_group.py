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
    assert any("--group doc (24 groups)" in note for note in result.notes)


@pytest.mark.parametrize(
    ("path", "group", "message"),
    [
        ("grouped", "topic", "--group topic: no label column 'topic' in .*; label columns: label, doc, score, partial"),
        ("grouped", "label", "--group label is the label probed"),
        ("leaky", "doc", "1 group\\(s\\) have rows in both the train and the test split, e.g. 'd1'"),
    ],
)
def test_a_bad_group_is_refused_before_any_forward_pass(
    grouped_file, leaky_split_file, no_forward, path, group, message
):
    with pytest.raises(InputError, match=message):
        intervene(grouped_file if path == "grouped" else leaky_split_file, group=group, **QUICK)


def test_steering_has_no_folds_to_group():
    with pytest.raises(InputError, match="--edit steer fits no probe by folds"):
        InterveneConfig(features="x.h5", edit="steer", toward="pos", at="1", bundle="b.featx", group="doc")
    assert InterveneConfig(features="x.h5", label="label", at="1", group="doc").group == "doc"
    with pytest.raises(InputError, match="--group label is the label probed"):
        InterveneConfig(features="x.h5", label="label", at="1", group="label")


def test_the_cli_lists_the_flag():
    assert "--group" in CliRunner().invoke(main, ["intervene", "--help"]).output
