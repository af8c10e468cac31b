"""After ``featx erase`` at layer L, the eraser applied inside the forward pass (``--intervene erase:...@L``)
leaves a fresh probe at layer L at chance on held-out rows: a planted label, along the widest direction of
the layer-1 mean-pooled states, read at 0.9 or more before, at the majority class after (mean pooling is
linear, so the stored pooled vectors are the eraser's image of the plain ones: LEACE's guarantee carries
over)."""

from __future__ import annotations

import numpy as np
import pytest
from support.deploy_data import deploy_rows
from support.tiny import write_csv

import featx
from featx.probing import erase


@pytest.mark.slow  # three extractions, an erasure and two fits of 90 rows (~6 s)
def test_erasing_inside_the_forward_pass_leaves_a_fresh_probe_at_chance(split_features, tiny_model, tmp_path):
    with featx.open(split_features) as features:
        X = features.features("mean", 1).astype(np.float64)
    centred = X - X.mean(0)
    score = centred @ np.linalg.svd(centred, full_matrices=False)[2][0]  # along the states' widest direction
    low, high = np.quantile(score, [1 / 3, 2 / 3])
    planted = np.where(score > high, "high", np.where(score < low, "low", ""))  # the middle third unlabelled
    rows = [[row[0], planted[i], row[4]] for i, row in enumerate(deploy_rows())]
    corpus = write_csv(tmp_path / "planted.csv", rows, header=("text", "planted", "split"))
    options = {"model": str(tiny_model), "poolings": "mean", "layers": "0:2", "progress": False}
    plain = featx.extract(corpus, output=tmp_path / "plain.h5", **options).output
    before = featx.fit(plain, label="planted", layer="1", pooling="mean", folds=3, write=False).test
    assert before["score"] >= 0.9
    erase(plain, label="planted", layers="1", poolings="mean", method="leace", output=tmp_path / "erased.h5")
    erasers = tmp_path / "erased.erasers.npz"
    edited = featx.extract(corpus, output=tmp_path / "edited.h5", intervene=f"erase:{erasers}@1", **options).output
    after = featx.fit(edited, label="planted", layer="1", pooling="mean", folds=3, write=False).test
    assert after["score"] <= after["baseline"] + 0.1, after
