"""Sentence-pair files whose rows share sentences in known ways (``--group @text``, ``@text_pair``, ``@texts``).

``SMALL``: nine pairs, each group of each reserved name written out (``SMALL_GROUPS``), extracted cross-encoded.
``chain_rows``: chains of pairs, each linking the next by one sentence (as text a or b, in varied orientations, so
that only ``@texts`` joins a whole chain), the chains' rows shuffled through the file; each chain is one group of
``@texts``. With ``split="clean"`` whole chains go to train or test; with ``split="leaky"`` one chain straddles.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import featx
from support.tiny import WORDS, write_csv

# Nine pairs: rows 0 and 1 share text a; 0 and 2 text b; 1's b is 3's a (so 0..3 form one chain of @texts);
# 4 and 5 share text b; 6 and 7 are one pair each way round; 8 holds one sentence twice.
SMALL = [
    ("the cat", "the dog"),
    ("the cat", "a film"),
    ("a critic", "the dog"),
    ("a film", "old books"),
    ("red house", "blue city"),
    ("green plan", "blue city"),
    ("we walk", "they run"),
    ("they run", "we walk"),
    ("she saw it", "she saw it"),
]
SMALL_GROUPS = {  # each row's group: the row number of the group's first row
    "@text": [0, 0, 2, 3, 4, 5, 6, 7, 8],
    "@text_pair": [0, 1, 0, 3, 4, 4, 6, 7, 8],
    "@texts": [0, 0, 0, 0, 4, 4, 6, 6, 8],
}
SMALL_SHARED = 6  # the cat, the dog, a film, blue city, we walk, they run (she saw it: twice in one row)

N_CHAINS, SIZES = 20, (1, 2, 3, 4, 5)  # chain k has SIZES[k % 5] rows: 60 rows
PLAIN = [word for word in WORDS if word.isalpha()]


def _sentence(number: int) -> str:
    return f"{PLAIN[number % len(PLAIN)]} {PLAIN[number // len(PLAIN) % len(PLAIN)]} {PLAIN[number % 7]}"


def chain_rows(seed: int = 0) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The pairs of every chain, shuffled, and the chain of each row: chain k's rows link sentences s0-s1, s1-s2,
    ..., each pair in one of two orientations."""
    pairs, chains, used = [], [], 0
    for chain in range(N_CHAINS):
        size = SIZES[chain % len(SIZES)]
        sentences = [_sentence(used + step) for step in range(size + 1)]
        used += size + 1
        for step in range(size):
            a, b = sentences[step], sentences[step + 1]
            pairs.append((a, b) if (chain + step) % 3 else (b, a))
            chains.append(chain)
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    return [pairs[i] for i in order], np.asarray([chains[i] for i in order])


def chain_first_rows(chains: np.ndarray) -> np.ndarray:
    """Each row's chain named as ``@texts`` names its group: the row number of the chain's first row."""
    first = {chain: int(np.flatnonzero(chains == chain)[0]) for chain in np.unique(chains)}
    return np.asarray([first[chain] for chain in chains])


def make_chains(
    folder: Path, tiny_model: Path, split: str | None = None, pair_mode: str = "separate", seed: int = 0
) -> tuple[Path, np.ndarray]:
    """``(features, chain of each row)``: the chains' pairs (labels ``label``, yes/no drawn per row, and ``score``)
    extracted in ``pair_mode``; ``split``: None, ``"clean"`` or ``"leaky"``."""
    folder.mkdir(parents=True, exist_ok=True)
    pairs, chains = chain_rows(seed)
    rng = random.Random(seed + 1)
    rows = []
    for index, ((a, b), chain) in enumerate(zip(pairs, chains, strict=True)):
        row = [a, b, ("no", "yes")[rng.random() < 0.5], f"{rng.uniform(1, 5):.2f}"]
        if split is not None:
            leaked = split == "leaky" and chain == 4 and index == int(np.flatnonzero(chains == 4)[0])
            row.append("test" if chain % 4 == 0 and not leaked else "train")
        rows.append(row)
    header = ("a", "b", "label", "score") + (("split",) if split is not None else ())
    corpus = write_csv(folder / "chains.csv", rows, header=header)
    output = folder / "chains.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, text_col="a", text_pair_col="b",
                  pair_mode=pair_mode, poolings="mean", progress=False)  # fmt: skip
    return output, chains


def make_small(folder: Path, tiny_model: Path) -> Path:
    """``SMALL`` cross-encoded, with a label (``label``) and a numeric ``score``."""
    rows = [[a, b, ("no", "yes")[i % 2], str(i)] for i, (a, b) in enumerate(SMALL)]
    corpus = write_csv(folder / "small.csv", rows, header=("a", "b", "label", "score"))
    output = folder / "small.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, text_col="a", text_pair_col="b", progress=False)
    return output
