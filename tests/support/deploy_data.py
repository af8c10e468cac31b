"""The deploy tests' shared data: a tiny-model features file with a train/test split, a class label, a
3-class label and a numeric score, and a stand-in encoder that looks texts up in a features file."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import featx
from support.tiny import WORDS, write_csv

N_ROWS = 90


def deploy_rows(n: int = N_ROWS, seed: int = 0) -> list[list[str]]:
    """Rows of text, label (neg/pos), topic (a/b/c), score (a number) and split (two rows in five test)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = f"{i} " + " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(3, 9)))
        score = f"{(i * 37) % 23 + rng.random():.3f}"
        rows.append(
            [text, ("neg", "pos")[i % 2], ("a", "b", "c")[i % 3], score, "test" if i % 5 in (0, 3) else "train"]
        )
    return rows


def make_split_features(folder: Path, tiny_model: Path, **extract_options) -> Path:
    """The tiny model's features of ``deploy_rows`` (mean and cls pooling unless given)."""
    header = ("text", "label", "topic", "score", "split")
    corpus = write_csv(folder / "corpus.csv", deploy_rows(), header=header)
    output = folder / "corpus.features.h5"
    options = {"poolings": "mean,cls", "progress": False, **extract_options}
    featx.extract(corpus, model=str(tiny_model), output=output, **options)
    return output


def stored_lookup(features_path: Path):
    """A stand-in for ``Probe.features``: each text's stored features, looked up by its text."""
    from featx.deploy.features import stored_matrix

    with featx.open(features_path) as features:
        texts = features.texts

    def features_of(probe, texts_in, text_pairs=None, **overrides):
        rows = np.array([texts.index(text) for text in texts_in])
        with featx.open(features_path) as features:
            return stored_matrix(features, probe.spec, probe.pooling, rows)

    return features_of
