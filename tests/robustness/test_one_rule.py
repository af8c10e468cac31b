"""One rule everywhere. On a corpus with train, val and test splits ``featx fit`` and ``featx probe`` train the
same head on the same rows (the train rows; C or alpha chosen, or an mlp early-stopped, on the val rows) and say
so, so that the same layer and pooling score the same on the test rows; the report's baseline-features line takes
the row chosen on the training part, as the terminal does, not the best test value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.deploy_data import deploy_rows
from support.results import synthetic_results
from support.tiny import write_csv

import featx
from featx.report import load_results, references


@pytest.fixture(scope="module")
def three_splits(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("three-splits")
    rows = [row[:4] + [("train", "val", "train", "test", "train")[i % 5]] for i, row in enumerate(deploy_rows(150))]
    corpus = write_csv(folder / "corpus.csv", rows, header=("text", "label", "topic", "score", "split"))
    output = folder / "f.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


# (case, fit options, probe options, the probe table's score column, what the val rows did: fit's words, probe's)
AGREEING = [
    ("logreg", {"label": "label"}, {"label": "label"}, "accuracy", ("its C chosen", "C chosen")),
    (
        "svm",
        {"label": "topic", "classifier": "svm"},
        {"label": "topic", "classifiers": "svm"},
        "accuracy",
        ("its C chosen", "C chosen"),
    ),
    (
        "mlp",
        {"label": "label", "classifier": "mlp"},
        {"label": "label", "classifiers": "mlp"},
        "accuracy",
        ("early-stopped", "early-stopped"),
    ),
    ("ridge", {"label": "score"}, {"label": "score"}, "r2", ("its alpha chosen", "alpha chosen")),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "fit_options", "probe_options", "column", "val_did"), AGREEING, ids=[r[0] for r in AGREEING]
)
def test_fit_and_probe_train_on_the_same_rows(three_splits, case, fit_options, probe_options, column, val_did):
    fitted = featx.fit(three_splits, layer="1", pooling="mean", write=False, **fit_options)
    probed = featx.probe(
        three_splits, layers="1", poolings="mean", write=False, jobs=1, control=False, lexical=False, **probe_options
    )
    row = probed.table[(probed.table["kind"] == "single") & (probed.table["layer"] == 1)].iloc[0]
    assert fitted.test["score"] == pytest.approx(float(row[column]), abs=1e-9)
    trained = f"trained on the 90 train rows, {val_did[0]} on the 30 val rows (as featx probe trains)"
    assert trained in fitted.summary()
    assert f"trained on the 90 train rows, {val_did[1]} on the 30 val rows; tested on the 30 test rows" in probed.notes


def test_the_reports_baseline_line_is_the_row_chosen_on_the_training_part():
    frame, _ = synthetic_results(layers=range(3))
    baseline = (frame["features"] == "baseline") & (frame["kind"] == "single")
    frame["selection_score"] = np.nan
    frame.loc[baseline, "selection_score"] = np.where(frame.loc[baseline, "layer"] == 0, 0.9, 0.1)
    chosen = frame[baseline & (frame["layer"] == 0)].sort_values("selection_score").iloc[-1]
    names = dict(references(load_results(frame)[0]))
    line = f"baseline features (chosen: layer 0, {chosen['pooling']})"
    assert names == {**names, line: pytest.approx(float(chosen["accuracy"]))}
    assert not any(name.startswith("baseline features (best") for name in names)
    assert pd.notna(chosen["accuracy"])
