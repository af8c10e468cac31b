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


@pytest.mark.slow  # two extractions, an erasure and two probes of 90 rows (~6 s)
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
    probe = dict(label="planted", layers="1", poolings="mean", control=False, lexical=False, n_bootstrap=50, jobs=1)
    test = [label for label, row in zip(planted, deploy_rows(), strict=True) if row[4] == "test" and label]
    chance = max(test.count("high"), test.count("low")) / len(test)
    before = featx.probe(plain, output=tmp_path / "before", **probe).table
    assert before[before.kind == "single"].accuracy.iloc[0] >= 0.9
    erase(plain, label="planted", layers="1", poolings="mean", method="leace", output=tmp_path / "erased.h5")
    erasers = tmp_path / "erased.erasers.npz"
    edited = featx.extract(corpus, output=tmp_path / "edited.h5", intervene=f"erase:{erasers}@1", **options).output
    after = featx.probe(edited, output=tmp_path / "after", **probe).table
    assert after[after.kind == "single"].accuracy.iloc[0] <= chance + 0.1
