"""``run_logreg_sets``: logreg probes on several column sets of one fold, solved together, give each set exactly what
``run_linear_tasks`` gives it alone (C chosen, test predictions, validation rows and predictions)."""

from __future__ import annotations

import numpy as np
import pytest
from support.blobs import blobs

from featx.probing import evaluation as ev
from featx.probing.config import DEFAULT_CS
from featx.probing.evaluation import column_sets

SETS = [np.array([0, 1, 2]), np.array([3, 7, 9]), np.array([2, 5, 11]), np.array([4, 6, 8])]


def _fold(dev: bool, grouped: bool):
    X, y = blobs(n=150, k=3, seed=8, separation=0.6)
    rows = np.random.default_rng(9).permutation(len(y))
    train, test = np.sort(rows[:100]), np.sort(rows[100:130])
    groups = np.arange(len(y)) // 3 if grouped else None
    return X, y, train, test, (np.sort(rows[130:]) if dev else None), groups


@pytest.mark.parametrize(
    ("dev", "grouped", "preconditioned"),
    [(False, False, False), (True, False, False), (False, True, False), (False, False, True)],
    ids=["holdout", "dev rows", "groups", "one by one"],
)
def test_each_set_gets_what_it_gets_alone(monkeypatch, dev, grouped, preconditioned):
    X, y, train, test, dev_rows, groups = _fold(dev, grouped)
    holdout = (
        None if dev else ev.inner_split(y[train], np.arange(len(train)), 3, None if groups is None else groups[train])
    )
    if preconditioned:  # sets this large are fitted one by one, by run_linear_tasks itself
        monkeypatch.setattr(column_sets, "PRECONDITION_VALUES", 10)
    together = ev.run_logreg_sets(X, SETS, y, train, test, dev_rows, 3, DEFAULT_CS, False, 3, groups, holdout)
    Cs = set()
    for columns, result in zip(SETS, together, strict=True):
        alone = ev.run_linear_tasks(
            "logreg", X[:, columns], [y], train, test, dev_rows, 3, DEFAULT_CS, False, 3, groups
        )
        assert result.C == alone[0].C
        np.testing.assert_array_equal(result.predictions, alone[0].predictions)
        for mine, theirs in zip(result.validation, alone[0].validation, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        Cs.add(result.C)
    assert len(Cs) > 1  # the sets' C paths differ, each kept its own
