"""The scalar-mix layer summary says what it was scored on: fitted on one fold only under cross-validation (a fit per
layer and fold would multiply its cost by the folds), so its accuracies are not the table's cross-validated ones."""

from __future__ import annotations

import numpy as np

from featx.probing.analyses import scalar_mix


def test_the_summary_says_it_was_scored_on_the_first_fold_only(monkeypatch):
    monkeypatch.setattr(scalar_mix, "fit_mix", lambda data, upto, n, seed: (np.full(upto, 1 / upto), 0.5 + upto / 10))
    parts = np.zeros((4, 3, 2), np.float16), np.arange(4), np.zeros(4, int), np.arange(2), np.arange(2, 3)
    said = {}
    for n_folds in (1, 5):
        data = scalar_mix.MixData(*parts, np.arange(3, 4), [0, 1, 2], False, n_folds)
        said[n_folds] = scalar_mix.layer_summary(data, 2, 0)["scored_on"]
    assert said == {1: "the test split", 5: "the first fold's test part only (1 of 5 folds, not cross-validated)"}
