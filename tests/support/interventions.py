"""Helpers of the ``featx intervene`` tests (``tests/interventions``): a corpus whose 'animal' label is planted in the
text, and a tiny model of a family saved with its LM head, with its features."""

from __future__ import annotations

import random
from pathlib import Path

from support.tiny import WORDS, write_csv

N_ROWS = 80


def planted_rows(n: int = N_ROWS) -> list[list[str]]:
    """Rows of text (random words and "cats" or "dogs"), animal, other (a or b at random) and split (2 in 5 test)."""
    rng = random.Random(0)
    rows = []
    for i in range(n):
        animal = ("cats", "dogs")[i % 2]
        words = [rng.choice(WORDS[:40]) for _ in range(rng.randint(3, 7))]
        words.insert(rng.randint(0, len(words)), animal)
        rows.append([" ".join(words), animal, rng.choice("ab"), "test" if i % 5 in (0, 3) else "train"])
    return rows


def lm_features(folder: Path, family: str, model_class: str, n_rows: int = 40) -> Path:
    """A tiny ``family`` model saved with its LM head (``model_class``), and its features of ``n_rows`` planted rows."""
    import dataclasses

    import featx
    from support.families import BY_NAME, build_family

    model = build_family(dataclasses.replace(BY_NAME[family], model=model_class), folder / "model")
    corpus = write_csv(folder / "corpus.csv", planted_rows(n_rows), header=("text", "animal", "other", "split"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(model), output=output, poolings="mean", progress=False)
    return output
