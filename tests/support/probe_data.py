"""The probing tests' shared data: rows of a 2-class and a 3-class label, and the tiny-model features file of
80 such rows (built once per session by the ``tiny_features`` fixture of the root ``conftest.py``)."""

from __future__ import annotations

import random
from pathlib import Path

import featx
from support.tiny import WORDS, write_csv

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


def make_tiny_features(folder: Path, tiny_model: Path) -> Path:
    """Tiny-model features of ``N_ROWS`` rows with token states: label (2 classes) and topic (3 classes)."""
    corpus = write_csv(folder / "corpus.csv", make_rows(N_ROWS), header=("text", "label", "topic"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, tokens=True, progress=False)
    return output
