"""Paired tests between ``--group @texts`` runs draw the probe's own folds again from the predictions file's
``group`` column (each group named by its first row's number), as for a label column's groups."""

from __future__ import annotations

import numpy as np
import pytest
from support.planted_pairs import chain_first_rows

import featx
from featx.io import read_csv
from featx.report import load_results
from featx.report.paired import _paired_inputs, paired_test_at, predictions_path, run_groups

QUICK = dict(layers="all", lexical=False, control=False, jobs=1, n_bootstrap=100)


@pytest.mark.slow
def test_a_texts_grouped_run_is_tested_on_its_own_folds(chain_pairs, tmp_path):
    path, chains = chain_pairs
    result = featx.probe(path, label="label", group="@texts", output=tmp_path / "texts", **QUICK)
    meta = load_results(result.csv_path)[1]
    frame = read_csv(predictions_path(meta), dtype=str, keep_default_na=False)
    assert list(frame["group"]) == [str(row) for row in chain_first_rows(chains)[frame["row"].astype(int)]]
    groups = run_groups(meta, frame)
    assert groups.column == "@texts" and groups.count == 20
    *_, plan, _ = _paired_inputs(meta, meta, "accuracy")
    assert plan.evaluation == "5-fold cv by @texts" and len(plan.folds) == 5
    rows = frame["row"].astype(int).to_numpy()
    assert all(not set(chains[rows[train]]) & set(chains[rows[test]]) for train, test in plan.folds)
    table = result.table[(result.table.kind == "single") & (result.table.classifier == "logreg")]
    best = int(table[table.is_best.astype(bool)].layer.iloc[0])
    others = table[table.layer != best]
    assert len(others) == 2
    for row in others.itertuples():  # the same folds give the probe's own p
        assert paired_test_at(meta, int(row.layer), meta, best)["p"] == pytest.approx(row.p_vs_best, abs=1e-9)
    assert np.isfinite(others.p_vs_best).all()
