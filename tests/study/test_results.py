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
