"""Fixtures of the ``featx intervene`` tests: the tiny BERT's features of a corpus whose 'animal' label is planted in
the text (each row holds the word 'cats' or 'dogs', so every layer holds it linearly), a random 'other' column and
a train/test split; the experiment run once at layer 1; a bundle of 'animal' at layer 2."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.tiny import WORDS, write_csv

N_ROWS = 80


def planted_rows(n: int = N_ROWS) -> list[list[str]]:
    rng = random.Random(0)
    rows = []
    for i in range(n):
        animal = ("cats", "dogs")[i % 2]
        words = [rng.choice(WORDS[:40]) for _ in range(rng.randint(3, 7))]
        words.insert(rng.randint(0, len(words)), animal)
        rows.append([" ".join(words), animal, rng.choice("ab"), "test" if i % 5 in (0, 3) else "train"])
    return rows


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


def lm_features(folder: Path, family: str, model_class: str) -> Path:
    """A tiny ``family`` model saved with its LM head (``model_class``), and its features of 40 planted rows."""
    import dataclasses

    from support.families import BY_NAME, build_family

    import featx

    model = build_family(dataclasses.replace(BY_NAME[family], model=model_class), folder / "model")
    corpus = write_csv(folder / "corpus.csv", planted_rows(40), header=("text", "animal", "other", "split"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(model), output=output, poolings="mean", progress=False)
    return output
