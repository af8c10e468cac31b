"""``featx fit --group COLUMN`` on rows planted to share a spurious signal within their groups
(``support.planted_groups``): the choice of layer by whole groups is not fooled by the memorised groups, every
holdout that chooses C or alpha (or stops an mlp) keeps groups whole, the group is recorded in the bundle, and
bad group columns are refused before any fitting, as ``featx probe --group`` refuses them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from support.planted_groups import BAD_GROUPS, make_grouped, plant_layer_choice

import featx
from featx.cli import main
from featx.deploy import FitConfig
from featx.deploy.choose import cv_folds
from featx.errors import InputError
from featx.probing import Groups
from featx.probing.evaluation import core
from featx.probing.solvers import ridge

QUICK = dict(write=False, jobs=1, n_bootstrap=200)


@pytest.fixture(scope="module")
def layered_file(tiny_model, tmp_path_factory):
    path = make_grouped(tmp_path_factory.mktemp("fit-layered"), tiny_model)
    plant_layer_choice(path)
    return path


@pytest.mark.slow
def test_the_grouped_choice_is_not_fooled_by_memorised_groups(layered_file):
    ungrouped = featx.fit(layered_file, label="label", **QUICK)
    grouped = featx.fit(layered_file, label="label", group="doc", **QUICK)
    assert ungrouped.chosen.spec.name == "1" and ungrouped.chosen.score > 0.9  # the memorised groups
    assert grouped.chosen.spec.name == "2"  # the genuine signal
    spurious = {c.spec.name: c.score for c in grouped.candidates}["1"]
    assert spurious < 0.75 < grouped.chosen.score
    selection = grouped.probe.info["selection"]
    assert (selection["group"], selection["n_groups"]) == ("doc", 24)
    assert "by whole groups of doc" in selection["on"]
    assert "group" not in ungrouped.probe.info["selection"]
    assert any("a doc group's rows in one fold" in line for line in grouped.summary())


def test_grouped_regression_scores_are_not_memorised(grouped_file):
    ungrouped = featx.fit(grouped_file, label="score", layer="1", pooling="mean", **QUICK)
    grouped = featx.fit(grouped_file, label="score", layer="1", pooling="mean", group="doc", **QUICK)
    assert ungrouped.chosen.score > 0.9 and grouped.chosen.score < 0.5


@pytest.mark.slow
@pytest.mark.parametrize(
    ("label", "classifier", "layer"),
    [("label", "logreg", "1"), ("label", "svm", "stack"), ("label", "mlp", "1"), ("score", "ridge", "1")],
)
def test_every_holdout_keeps_groups_whole(grouped_file, monkeypatch, label, classifier, layer):
    drawn = []

    def spy(original):
        def split(*args):
            fit_rows, val_rows = original(*args)
            groups = args[-1]
            drawn.append(groups is not None and not len(np.intersect1d(groups[fit_rows], groups[val_rows])))
            return fit_rows, val_rows

        return split

    monkeypatch.setattr(core, "inner_split", spy(core.inner_split))  # logreg's and svm's C, an mlp's stopping
    monkeypatch.setattr(ridge, "holdout", spy(ridge.holdout))
    featx.fit(grouped_file, label=label, classifier=classifier, layer=layer, pooling="mean", group="doc", **QUICK)
    assert drawn and all(drawn)  # each fold's head and the final head: whole groups held out


def test_the_choice_folds_never_split_a_group():
    codes = np.repeat(np.arange(12), [3, 5, 2, 4, 6, 3, 2, 5, 4, 3, 2, 6])
    groups = Groups("doc", codes, [f"g{k}" for k in range(12)])
    y = (codes % 2).astype(np.int64)
    for n_classes, targets in ((2, y), (None, codes * 0.5)):
        folds = cv_folds(targets, n_classes, 4, 0, groups)
        assert sorted(np.concatenate([test for _, test in folds]).tolist()) == list(range(len(codes)))
        assert all(not len(np.intersect1d(codes[train], codes[test])) for train, test in folds)


def test_a_split_with_a_group_in_train_and_test_is_refused(leaky_split_file):
    with pytest.raises(InputError, match="both the train and the test split, e.g. 'd1'"):
        featx.fit(leaky_split_file, label="label", group="doc", **QUICK)


@pytest.mark.parametrize(
    ("options", "message"),
    BAD_GROUPS,
)
def test_bad_group_columns_are_refused_before_fitting(grouped_file, options, message, monkeypatch):
    monkeypatch.setattr("featx.deploy.fitting.choose", lambda *a, **k: pytest.fail("a candidate was scored"))
    with pytest.raises(InputError, match=message):
        featx.fit(grouped_file, label="label", **options, **QUICK)


def test_the_group_equal_to_the_label_is_refused_when_made():
    with pytest.raises(InputError, match="every group would hold one class"):
        FitConfig(label="topic", group="topic")
    with pytest.raises(InputError, match="--group is empty"):  # a config made directly: the flags
        FitConfig(group=" ")
    with pytest.raises(InputError, match="^group is empty\n  hint: .*e.g. group='doc'$"):  # featx.fit: the keyword
        featx.fit("x.h5", group=" ")


def test_word_labels_refuse_group(word_features):
    path, _ = word_features
    with pytest.raises(InputError, match="word probes already fold"):
        featx.fit(path, label="upos", group="doc", write=False)


def test_the_cli_flag_groups_the_choice_and_the_bundle_records_it(grouped_file, tmp_path):
    output = tmp_path / "grouped.featx"
    args = ["fit", str(grouped_file), "--label", "label", "--layer", "1", "--jobs", "1"]
    result = CliRunner().invoke(main, [*args, "--group", "doc", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert "a doc group's rows in one fold" in result.output
    manifest = json.loads((output / "manifest.json").read_text())
    assert (manifest["selection"]["group"], manifest["selection"]["n_groups"]) == ("doc", 24)
    assert featx.load(output).info["selection"]["group"] == "doc"
    refused = CliRunner().invoke(main, [*args, "--group", "nope", "-o", str(tmp_path / "no.featx")])
    assert refused.exit_code == 2 and "featx: error: --group nope: no label column 'nope'" in refused.output
