"""The study's results table's depth: ``n_layers`` is the model's top layer as ``featx compare`` reads it
(``featx.report.model_top_layer``: the features file's record of the model, else the highest probed layer), so that
a study of files extracted with only some layers puts them where compare does."""

from __future__ import annotations

import pandas as pd
from support.tiny import SENTENCES, write_csv

import featx
from featx.report import model_top_layer
from featx.study.results import top_layer


def test_a_file_of_some_layers_is_as_deep_as_its_model_as_compare_reads_it(tiny_model, tmp_path):
    corpus = write_csv(tmp_path / "c.csv", SENTENCES[:4])
    path = tmp_path / "low.h5"
    featx.extract(corpus, model=str(tiny_model), output=path, layers="0,1", poolings="mean", progress=False)
    probed = pd.Series([0, 1])
    assert top_layer(path, probed) == 2  # the 2-layer tiny model: its layer 1 is half-way up, not at its top
    assert top_layer(path, probed) == model_top_layer(str(path), probed)  # compare's rule, through one function
    assert top_layer(tmp_path / "moved.h5", probed) == 1  # no file to read: the highest probed layer


def test_a_number_stands_beside_its_training_mean_as_a_class_label_beside_its_majority_class(tmp_path):
    """A regression probe's reference row is its ``baseline`` (the training mean), not ``majority``: the study's
    table left ``majority`` (and the summary's ``over_majority``) empty for every number, as compare does not."""
    from types import SimpleNamespace

    from featx.study.results import cell_rows

    common = dict(features="main", site="hidden", task="regression", pooling="mean", n_train=30, n_test=10)
    single = dict(kind="single", layer_spec="1", layer=1, classifier="ridge", r2=0.4, r2_low=0.2, r2_high=0.5,
                  control_r2=0.0, selection_score=0.35, p_vs_best_holm=None, significant_vs_best=None)  # fmt: skip
    reference = dict(kind="baseline", layer_spec="train mean", layer=None, classifier="mean", r2=-0.03)
    results = tmp_path / "out" / "m" / "c" / "score.probe.csv"
    results.parent.mkdir(parents=True)
    pd.DataFrame([{**common, **single}, {**common, **reference}]).to_csv(results, index=False)
    results.with_suffix(".json").write_text('{"meta": {"metric": "r2"}, "results": []}')
    model = SimpleNamespace(name="m", random_init=False, seed=None)
    cell = SimpleNamespace(model=model, corpus=SimpleNamespace(name="c"), label="score", results=results)
    rows = cell_rows(cell, tmp_path / "gone.h5", tmp_path / "out", lexical=0.1)
    assert rows.majority.tolist() == [-0.03] and rows.score.tolist() == [0.4] and rows.metric.tolist() == ["r2"]
