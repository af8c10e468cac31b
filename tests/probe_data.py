"""Shared probing fixtures: tiny-model features of 80 rows with a 2-class and a 3-class label."""

from __future__ import annotations

import random
import shutil

import pytest
from conftest import WORDS, write_csv

import featx

N_ROWS = 80


def make_rows(n: int, seed: int = 0, split: bool = False):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(3, 9)))
        label = ("neg", "pos")[i % 2]
        topic = ("a", "b", "c")[i % 3]
        row = [text, label, topic]
        if split:
            row.append("test" if i % 4 == 0 else "train")
        rows.append(row)
    return rows


@pytest.fixture(scope="session")
def tiny_features(tiny_model, tmp_path_factory):
    """Tiny-model features of 80 rows with token states: label (2 classes) and topic (3 classes)."""
    folder = tmp_path_factory.mktemp("probe-data")
    corpus = write_csv(folder / "corpus.csv", make_rows(N_ROWS), header=("text", "label", "topic"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, tokens=True, progress=False)
    return output


@pytest.fixture
def features_copy(tiny_features, tmp_path):
    target = tmp_path / "feats.h5"
    shutil.copy(tiny_features, target)
    return target
