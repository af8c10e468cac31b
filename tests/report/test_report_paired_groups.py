"""Paired tests between ``--group`` runs (``featx compare``, a study's model-vs-model tests) rebuild the probe's own
folds by whole groups, from the group of every row that the predictions file now gives; before, they drew plain
stratified folds that split the groups, and so tested other folds than the probe's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import featx
from featx.io import read_csv
from featx.probing import run_groups, run_plan
from featx.report import load_results
from featx.report.paired import _paired_inputs, paired_test_at, predictions_path, why_not_paired
from featx.store import FeatureFile

QUICK = dict(layers="all", lexical=False, control=False, jobs=1, n_bootstrap=100)


@pytest.fixture(scope="module")
def grouped_run(grouped_file, tmp_path_factory):
    """``(result, meta)`` of ``featx probe --group doc`` on the planted groups, written to a folder of its own."""
    output = tmp_path_factory.mktemp("paired-groups") / "grouped"
    result = featx.probe(grouped_file, label="label", group="doc", output=output, **QUICK)
    return result, load_results(result.csv_path)[1]


def test_the_predictions_file_gives_every_rows_group(grouped_run, grouped_file):
    _, meta = grouped_run
    frame = read_csv(predictions_path(meta), dtype=str, keep_default_na=False)
    with FeatureFile(grouped_file) as features:
        stored = np.asarray(features.label_names("doc"), dtype=object)[features.labels("doc")]
    assert list(frame["group"]) == list(stored[frame["row"].astype(int)])


def test_a_grouped_run_is_tested_on_the_probes_own_folds(grouped_run):
    """Each layer against the chosen one, tested again from the files, gives the probe's own p (the corrected
    resampled t-test over the same folds: the same folds give the same p)."""
    result, meta = grouped_run
    *_, plan, _ = _paired_inputs(meta, meta, "accuracy")
    groups = run_groups(meta, read_csv(predictions_path(meta), dtype=str, keep_default_na=False)).codes
    assert plan.evaluation == "5-fold cv by doc" and len(plan.folds) == 5
    assert all(not len(np.intersect1d(groups[train], groups[test])) for train, test in plan.folds)
    rows = result.table[(result.table.kind == "single") & (result.table.classifier == "logreg")]
    best = int(rows[rows.is_best.astype(bool)].layer.iloc[0])
    others = rows[rows.layer != best]
    assert len(others) == 2
    for row in others.itertuples():
        assert paired_test_at(meta, int(row.layer), meta, best)["p"] == pytest.approx(row.p_vs_best, abs=1e-9)


def test_a_grouped_and_an_ungrouped_run_are_not_paired_and_an_old_file_is_one_clear_error(grouped_run):
    _, meta = grouped_run
    for evaluation in ("split", "5-fold cv by doc"):
        grouped = {**meta, "evaluation": evaluation}
        plain = {key: value for key, value in grouped.items() if key not in ("group", "n_groups")}
        assert why_not_paired(grouped, plain) == "different group column (doc vs None)"
    frame = read_csv(predictions_path(meta), dtype=str, keep_default_na=False).drop(columns="group")
    with pytest.raises(ValueError, match="does not give every row's group to draw its folds again by"):
        run_groups(meta, frame)
    assert run_groups({**meta, "group": None}, frame) is None


def test_a_grouped_split_resamples_whole_groups():
    frame = pd.DataFrame({"group": ["d2", "d1", "d2", "d10", "d1"]})
    meta = {"evaluation": "split", "group": "doc"}
    groups = run_groups(meta, frame)
    plan = run_plan(meta, np.zeros(5, int), ["a", "b"], None, groups)
    assert plan.is_split and list(plan.groups) == list(groups.codes) and len(set(plan.groups)) == 3
    assert plan.groups[0] == plan.groups[2] and plan.groups[1] == plan.groups[4]


@pytest.mark.slow
def test_a_grouped_regression_run_is_tested_on_its_own_folds_of_whole_groups(grouped_file, tmp_path):
    """The same for a regression label: no doc on both sides of a rebuilt fold, and each layer's mean r2 over
    those folds is the score the probe reported."""
    result = featx.probe(
        grouped_file, label="score", group="doc", output=tmp_path / "run", **{**QUICK, "layers": "1,2"}
    )
    meta = load_results(result.csv_path)[1]
    frame, _, y, _, read, scoring, plan, _ = _paired_inputs(meta, meta, "r2")
    groups = run_groups(meta, read_csv(predictions_path(meta), dtype=str, keep_default_na=False)).codes
    assert plan.evaluation == "5-fold cv by doc"
    assert all(not len(np.intersect1d(groups[train], groups[test])) for train, test in plan.folds)
    singles = result.table[(result.table.kind == "single") & (result.table.classifier != "majority")]
    for _, row in singles.iterrows():
        predicted = read(frame[f"layer_{row.layer_spec}"])
        assert np.mean([scoring.value(y[test], predicted[test]) for _, test in plan.folds]) == pytest.approx(row.r2)
