"""``featx probe --group COLUMN`` end to end on rows planted to share a spurious signal within their groups
(``support.planted_groups``): ungrouped folds score the memorised groups, grouped folds do not; the meta,
the report and the command line say so; bad group columns are refused before any probe is fitted."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from support.planted_groups import BAD_GROUPS, make_grouped

import featx
from featx.cli import main
from featx.errors import InputError
from featx.probing import ProbeConfig
from featx.report.html.sections import run_rows

QUICK = dict(layers="1", lexical=False, write=False, jobs=1, n_bootstrap=200)


@pytest.fixture(scope="module")
def grouped_split_file(tiny_model, tmp_path_factory):
    return make_grouped(tmp_path_factory.mktemp("grouped-split"), tiny_model, split=True)


def _probe_row(result):
    return result.table[result.table.classifier == "logreg"].iloc[0]


def test_grouped_folds_do_not_score_memorised_groups(grouped_file):
    ungrouped = featx.probe(grouped_file, label="label", **QUICK)
    grouped = featx.probe(grouped_file, label="label", group="doc", **QUICK)
    assert _probe_row(ungrouped).accuracy > 0.95  # near-duplicates of every test row were fitted
    assert _probe_row(grouped).accuracy < 0.75  # the label is the group's, independent of its vector
    majority = grouped.table[grouped.table.classifier == "majority"].iloc[0].accuracy
    assert _probe_row(grouped).accuracy < majority + 0.1
    assert set(grouped.table.evaluation) == {"5-fold cv by doc"}
    meta = grouped.meta.to_dict()
    assert (meta["group"], meta["n_groups"]) == ("doc", 24)
    assert "group" not in ungrouped.meta.to_dict()
    assert any("group='doc' (24 groups)" in note for note in grouped.notes)  # as featx.probe's caller names it
    assert dict(run_rows(meta))["grouped by"].startswith("doc (24 groups)")


def test_grouped_regression_does_not_score_memorised_groups(grouped_file):
    ungrouped = featx.probe(grouped_file, label="score", **QUICK)
    grouped = featx.probe(grouped_file, label="score", group="doc", **QUICK)
    ridge, grouped_ridge = (result.table[result.table.classifier == "ridge"].iloc[0] for result in (ungrouped, grouped))
    assert ridge.r2 > 0.9 and grouped_ridge.r2 < 0.5
    assert grouped_ridge.evaluation == "5-fold cv by doc"
    assert grouped.meta.to_dict()["group"] == "doc"


def test_grouped_split_resamples_test_groups_and_keeps_curves_and_mdl_grouped(grouped_split_file):
    result = featx.probe(grouped_split_file, label="label", group="doc", train_sizes="0.5,1.0", mdl=True, **QUICK)
    assert result.meta.to_dict()["evaluation"] == "split"
    assert result.meta.to_dict()["group"] == "doc"
    row = _probe_row(result)
    assert np.isfinite(row.mdl_bits) and np.isfinite(row.control_mdl_bits)  # the control task's code beside it
    assert row.mdl_selectivity == pytest.approx(row.control_mdl_bits - row.mdl_bits)
    assert row.control_mdl_compression == pytest.approx(row.mdl_bits * row.mdl_compression / row.control_mdl_bits)
    assert result.curve is not None and set(result.curve.train_size) == {0.5, 1.0}


def test_the_group_column_can_come_from_a_labels_file(grouped_file, tmp_path):
    with h5py.File(grouped_file) as file:
        n_rows = len(file["labels/doc"])
    labels = tmp_path / "more.csv"
    labels.write_text("row,topic,source\n" + "".join(f"{i},{('a', 'b')[i % 2]},s{i // 10}\n" for i in range(n_rows)))
    result = featx.probe(grouped_file, labels=labels, join="row", label="topic", group="source", **QUICK)
    assert (result.meta.to_dict()["group"], result.meta.to_dict()["n_groups"]) == ("source", n_rows // 10)
    assert (result.meta.to_dict()["labels_file"], result.meta.to_dict()["join"]) == (str(labels), "row")
    stored = featx.probe(grouped_file, labels=labels, join="row", label="topic", group="doc", **QUICK)
    assert stored.meta.to_dict()["n_groups"] == 24  # a stored column groups the rows of a --labels label too


def test_a_split_with_a_group_in_train_and_test_is_refused(leaky_split_file):
    with pytest.raises(InputError, match="both the train and the test split, e.g. 'd1'"):
        featx.probe(leaky_split_file, label="label", group="doc", **QUICK)


@pytest.mark.parametrize(
    ("options", "message"),
    BAD_GROUPS,
)
def test_bad_group_columns_are_refused_before_fitting(grouped_file, options, message):
    with pytest.raises(InputError, match=message):
        featx.probe(grouped_file, label=options.pop("label", None), **options, **QUICK)


def test_the_group_equal_to_the_label_is_refused_when_made():
    with pytest.raises(InputError, match="every group would hold one class"):
        ProbeConfig(label="topic", group="topic")
    with pytest.raises(InputError, match="arc probes already fold by sentence"):
        ProbeConfig(arcs=True, label="deprel", group="doc")


def test_word_labels_refuse_group(word_features):
    path, _ = word_features
    with pytest.raises(InputError, match="word probes already fold"):
        featx.probe(path, label="upos", group="doc", write=False)


def test_the_cli_flag_groups_the_folds(grouped_file, tmp_path):
    prefix = tmp_path / "grouped"
    args = ["probe", str(grouped_file), "--label", "label", "--group", "doc", "--layer", "1", "--jobs", "1"]
    result = CliRunner().invoke(main, [*args, "--no-lexical", "-o", str(prefix)])
    assert result.exit_code == 0, result.output
    meta = json.loads(prefix.with_suffix(".json").read_text())["meta"]
    assert (meta["group"], meta["n_groups"], meta["evaluation"]) == ("doc", 24, "5-fold cv by doc")
    refused = CliRunner().invoke(main, [*args[:4], "--group", "nope"])
    assert refused.exit_code == 2 and "featx: error: --group nope: no label column 'nope'" in refused.output


def test_the_planted_groups_are_what_the_file_stores(grouped_file):
    with h5py.File(grouped_file) as file:
        doc, label = file["labels/doc"][:], file["labels/label"][:]
    for code in np.unique(doc):
        assert len(np.unique(label[doc == code])) == 1  # one label per group: grouped folds see no leak
