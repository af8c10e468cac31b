"""``featx fit --group @texts`` (and the other names of the texts) on pairs linked in chains by shared sentences
(``support.planted_pairs``): the folds that choose the layer never split a chain, the bundle records the name,
a misspelt name is refused before any fitting, and a pair file fitted without ``--group`` says how many of its
sentences its rows share."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import featx
from featx.cli import main
from featx.deploy import cv_baselines
from featx.errors import InputError

QUICK = dict(write=False, jobs=1, n_bootstrap=100, layer="1", pooling="mean")
NOTE = "40 sentence(s) occur in more than one of the 60 pairs (as text a or b)"


def test_the_choice_folds_never_split_a_chain_and_the_bundle_records_the_name(chain_pairs, monkeypatch):
    path, chains = chain_pairs
    drawn = []

    def spy(y, n_classes, folds, seed, groups=None):
        pairs = original(y, n_classes, folds, seed, groups)
        drawn.append((pairs, groups))
        return pairs

    original = cv_baselines.cv_folds  # the folds the candidates (and, without a test split, the baselines) use
    monkeypatch.setattr(cv_baselines, "cv_folds", spy)
    result = featx.fit(path, label="label", group="@texts", **QUICK)
    assert drawn
    for pairs, groups in drawn:  # no split: the training rows are every row, in order
        assert groups is not None and groups.count == 20
        assert all(not set(chains[train]) & set(chains[test]) for train, test in pairs)
    selection = result.probe.info["selection"]
    assert (selection["group"], selection["n_groups"]) == ("@texts", 20)
    assert not any(NOTE in line for line in result.summary())


def test_without_group_the_shared_sentences_are_noted_once(chain_pairs):
    path, _ = chain_pairs
    result = featx.fit(path, label="label", **QUICK)
    assert sum(NOTE in note for note in result.notes) == 1
    assert any(NOTE in line and "group='@texts'" in line for line in result.summary())


def test_a_misspelt_name_and_a_second_text_of_single_texts_are_refused(chain_pairs, split_features, monkeypatch):
    monkeypatch.setattr("featx.deploy.fitting.choose", lambda *a, **k: pytest.fail("a candidate was scored"))
    with pytest.raises(InputError, match="group='@pairs': '@pairs' is not a name of the texts") as err:
        featx.fit(chain_pairs[0], label="label", group="@pairs", **QUICK)
    assert "@text, @text_pair, @texts" in err.value.hint
    with pytest.raises(InputError, match="group='@text_pair': .* holds single texts"):
        featx.fit(split_features, label="label", group="@text_pair", **QUICK)


def test_the_cli_flag_takes_a_text_name(chain_pairs, tmp_path):
    output = tmp_path / "texts.featx"
    args = ["fit", str(chain_pairs[0]), "--label", "label", "--layer", "1", "--jobs", "1", "--group", "@text"]
    ran = CliRunner().invoke(main, [*args, "-o", str(output)])
    assert ran.exit_code == 0, ran.output
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["selection"]["group"] == "@text"
    assert manifest["selection"]["n_groups"] == len(np.unique([row[0] for row in _pairs(chain_pairs[0])]))


def _pairs(path) -> list[tuple[str, str]]:
    from featx.store import FeatureFile

    with FeatureFile(path) as features:
        return list(zip(features.texts, features.pair_texts, strict=True))
