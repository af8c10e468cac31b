"""Fixtures of the ``featx intervene`` tests: the tiny BERT's features of a corpus whose 'animal' label is planted in
the text (each row holds the word 'cats' or 'dogs', so every layer holds it linearly), a random 'other' column and
a train/test split; the experiment run once at layer 1; a bundle of 'animal' at layer 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.interventions import planted_rows
from support.tiny import write_csv


@pytest.fixture(scope="session")
def planted_features(tiny_model, tmp_path_factory) -> Path:
    import featx

    folder = tmp_path_factory.mktemp("intervene")
    corpus = write_csv(folder / "corpus.csv", planted_rows(), header=("text", "animal", "other", "split"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


@pytest.fixture(scope="session")
def erased_at_1(planted_features, tmp_path_factory):
    """``featx intervene --label animal --at 1`` on the planted file, its table written under a folder of its own."""
    from featx.interventions import intervene

    output = tmp_path_factory.mktemp("intervene-out") / "erased"
    return intervene(planted_features, label="animal", at="1", n_bootstrap=200, output=output)


@pytest.fixture(scope="session")
def animal_bundle(planted_features, tmp_path_factory) -> Path:
    import featx

    output = tmp_path_factory.mktemp("intervene-bundle") / "animal.featx"
    featx.fit(planted_features, label="animal", layer="2", pooling="mean", output=output, folds=3)
    return output


@pytest.fixture
def no_forward(monkeypatch):
    """Loading the model for the forward passes fails the test: every refusal must come before it."""
    from featx.interventions import forward

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded for its forward passes before the input was refused")

    monkeypatch.setattr(forward.Forward, "__init__", refuse)


@pytest.fixture(scope="session")
def scored_features(tiny_model, tmp_path_factory) -> Path:
    """The tiny BERT's features of a corpus with a class column 'a' and a continuous column 'score'."""
    from support.planted_columns import make_scored

    return make_scored(tmp_path_factory.mktemp("intervene-scored"), tiny_model)
