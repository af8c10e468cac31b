"""A tiny-model features file with four planted label columns, for the erasure, neuron and sweep tests (the
``planted_file`` and ``planted_split_file`` fixtures of ``tests/probing/conftest.py``).

Pooled ``mean`` features are replaced by noise plus, at every layer:
- ``a`` (2 classes): +-2 in neurons 0, 1, 2;
- ``b`` (2 classes, independent of ``a``): +-2 in neurons 3, 4, 5;
- ``c`` (3 classes): +3 in neuron 6 + class (one neuron per class);
- ``d`` (3 classes, ordered): 6 * (class - 1) in neuron 9 (a 1-dimensional signal).
"""

from __future__ import annotations

import random

import h5py
import numpy as np

import featx
from support.tiny import WORDS, write_csv

N_ROWS = 240
A_NEURONS = (0, 1, 2)
C_NEURONS = (6, 7, 8)
D_NEURON = 9


def make_planted(folder, tiny_model, n_rows: int = N_ROWS, split: bool = False, seed: int = 0):
    rng = random.Random(seed)
    rows = []
    for i in range(n_rows):
        text = " ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 8)))
        row = [text, ("neg", "pos")[i % 2], ("x", "y")[(i // 2) % 2], "klm"[i % 3], "pqr"[(i // 3) % 3]]
        if split:
            row.append("test" if i % 4 == 0 else "train")
        rows.append(row)
    header = ("text", "a", "b", "c", "d") + (("split",) if split else ())
    corpus = write_csv(folder / "corpus.csv", rows, header=header)
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    noise = np.random.default_rng(seed)
    with h5py.File(output, "r+") as file:
        codes = {name: file[f"labels/{name}"][:] for name in "abcd"}
        data = noise.standard_normal(file["pooled/mean"].shape).astype(np.float32)
        data[:, :, list(A_NEURONS)] += 2.0 * (2 * codes["a"][:, None, None] - 1)
        data[:, :, 3:6] += 2.0 * (2 * codes["b"][:, None, None] - 1)
        for cls, neuron in enumerate(C_NEURONS):
            data[:, :, neuron] += 3.0 * (codes["c"][:, None] == cls)
        data[:, :, D_NEURON] += 6.0 * (codes["d"][:, None] - 1)
        file["pooled/mean"][...] = data.astype(file["pooled/mean"].dtype)
    return output


def make_scored(folder, tiny_model, n_rows: int = 48):
    """A tiny-model features file (a train/test split) with a class column ``a`` (neg/pos) and a continuous column
    ``score`` (a distinct decimal per row): what erasure, neurons, the sweep and interventions must refuse."""
    rows = [
        [" ".join(WORDS[(i * 7 + k) % 40] for k in range(2 + i % 5)), ("neg", "pos")[i % 2], f"{0.37 * i:.2f}"]
        + ["test" if i % 4 == 0 else "train"]
        for i in range(n_rows)
    ]
    corpus = write_csv(folder / "corpus.csv", rows, header=("text", "a", "score", "split"))
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output
