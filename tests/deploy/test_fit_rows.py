"""Which rows featx fit chooses on, trains on and tests on (``deploy.rows``): rows whose split value is none of
train, val (dev, validation, valid) and test are left out of all three, as featx probe leaves them out, said in one
note; a split where no labelled row has a usable value is refused. fit trained on such rows before (every row not
in the test split was a training row), while probe ignored them."""

from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner
from support.shared_files import resplit

import featx
from featx.cli import main
from featx.deploy import head as heads

QUICK = dict(layer="1", pooling="mean", folds=3, write=False, jobs=1)
PROBE = dict(layers="1", poolings="mean", write=False, jobs=1, control=False, lexical=False)
USED = "split values other than train, val (dev, validation, valid) and test are not used"


def _holdout(split):
    """Every fourth train row moved to 'holdout', the first test row's split emptied."""
    out = split.copy()
    out[np.flatnonzero(split == "train")[::4]] = "holdout"
    out[np.flatnonzero(split == "test")[0]] = ""
    return out


def _counts(path) -> dict[str, int]:
    with featx.open(path) as file:
        values, counts = np.unique(np.asarray(file.split, dtype=str), return_counts=True)
    return dict(zip(values.tolist(), counts.tolist(), strict=True))


@pytest.fixture(scope="module")
def holdout_file(split_features, tmp_path_factory):
    return resplit(split_features, tmp_path_factory.mktemp("holdout"), _holdout)


def test_rows_of_another_split_value_are_left_out_of_fit_as_of_probe(holdout_file, monkeypatch):
    counts = _counts(holdout_file)
    note = f"{counts['holdout']} rows with split 'holdout' and 1 row with split '' left out: {USED}"
    with featx.open(holdout_file) as file:
        left_out = file.features("mean", 1)[np.isin(np.asarray(file.split, dtype=str), ["holdout", ""])]
    seen: list[np.ndarray] = []
    real = heads.fit_head
    monkeypatch.setattr(heads, "fit_head", lambda c, X, *a, **k: seen.append(X) or real(c, X, *a, **k))
    fitted = featx.fit(holdout_file, label="label", **QUICK)
    assert fitted.summary().count(note) == 1
    assert fitted.probe.info["selection"]["n_train"] == counts["train"]
    assert fitted.test is not None and fitted.test["n"] == counts["test"]
    never = {row.tobytes() for row in left_out}
    assert seen and not any(row.tobytes() in never for rows in seen for row in rows)
    probed = featx.probe(holdout_file, label="label", **PROBE)
    assert probed.notes.count(note) == 1 and note in probed.meta.to_dict()["notes"]
    assert f"trained on the {counts['train']} train rows; tested on the {counts['test']} test rows" in probed.notes
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert fitted.test["score"] == pytest.approx(float(row["accuracy"]), abs=1e-9)  # the same rows, the same head


def test_without_a_test_part_both_cross_validate_over_the_usable_rows_only(split_features, tmp_path):
    """A split of train and holdout rows: both cross-validated over every row before, holdout included."""
    path = resplit(split_features, tmp_path, lambda split: np.where(split == "test", "holdout", split).astype(object))
    counts = _counts(path)
    fitted = featx.fit(path, label="label", **QUICK)
    assert fitted.test is None and fitted.probe.info["selection"]["n_train"] == counts["train"]
    probed = featx.probe(path, label="label", folds=3, **PROBE)
    assert probed.meta["evaluation"] == "3-fold cv" and probed.meta["n_labelled"] == counts["train"]
    note = f"{counts['holdout']} rows with split 'holdout' left out: {USED}"
    assert note in fitted.summary() and note in probed.notes


@pytest.mark.slow
def test_a_split_without_one_usable_value_is_not_used_by_either(split_features, tmp_path):
    """Treebank files named neither train, dev nor test get their stems as split values: both cross-validate over
    every row, as they did, and say why the split is not used."""
    path = resplit(split_features, tmp_path, lambda split: np.where(split == "test", "dev-b", "part-a"))
    n_labelled = sum(_counts(path).values())  # every row of the fixture is labelled
    said = r"no row of .* has a split value featx uses .*: .* rows with split 'part-a' and .* rows with split 'dev-b'"
    fitted = featx.fit(path, label="label", **QUICK)
    assert fitted.test is None and fitted.probe.info["selection"]["n_train"] == n_labelled
    assert any(re.search(said, line) and "the split is not used" in line for line in fitted.summary())
    probed = featx.probe(path, label="label", folds=3, **PROBE)
    assert probed.meta["evaluation"] == "3-fold cv" and probed.meta["n_labelled"] == n_labelled
    assert any(re.search(said, note) and "the split is not used" in note for note in probed.notes)
    for command in (["fit", str(path), "--label", "label"], ["probe", str(path), "--label", "label"]):
        result = CliRunner().invoke(main, [*command, "-o", str(tmp_path / command[0])])
        assert result.exit_code == 0 and "the split is not used" in result.output, result.output


def test_words_of_sentences_of_another_split_value_are_left_out_of_both(word_features, tmp_path):
    path = resplit(word_features[0], tmp_path, _holdout)
    with featx.open(path) as file:
        labelled = file.word_labels("upos") >= 0
        split = np.asarray(file.split, dtype=str)[file.word_sentence()][labelled]
    n_holdout, n_empty = int((split == "holdout").sum()), int((split == "").sum())
    note = f"{n_holdout} words with split 'holdout' and {n_empty} words with split '' left out: {USED}"
    fitted = featx.fit(path, label="upos", **QUICK)
    assert fitted.summary().count(note) == 1
    assert fitted.probe.info["selection"]["n_train"] == int((split == "train").sum())
    assert fitted.test is not None and fitted.test["n"] == int((split == "test").sum())
    probed = featx.probe(path, label="upos", **PROBE)
    assert probed.notes.count(note) == 1
    assert probed.meta["n_labelled"] == int(np.isin(split, ["train", "test"]).sum())
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert fitted.test["score"] == pytest.approx(float(row["accuracy"]), abs=1e-9)
