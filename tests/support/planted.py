"""Tiny-model features with a planted label signal, shared by the MDL/curve/explain tests."""

from __future__ import annotations

import random

import h5py
import numpy as np

import featx
from support.tiny import WORDS, write_csv


def make_features(folder, tiny_model, n_rows: int = 80, split: bool = False):
    rng = random.Random(0)
    rows = []
    for i in range(n_rows):
        row = [" ".join(rng.choice(WORDS[:-4]) for _ in range(rng.randint(2, 12))), ("neg", "pos")[i % 2]]
        if split:
            row.append("test" if i % 5 < 2 else "train")  # both labels in both parts
        rows.append(row)
    header = ("text", "label", "split") if split else ("text", "label")
    corpus = write_csv(folder / "corpus.csv", rows, header=header)
    output = folder / "corpus.features.h5"
    featx.extract(corpus, model=str(tiny_model), output=output, poolings="mean", progress=False)
    return output


def plant(path, signal_layers: dict[int, float], pooling: str = "mean", seed: int = 0) -> np.ndarray:
    """Noise everywhere, plus a label signal of the given strength in the given layers."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "r+") as file:
        y = file["labels/label"][:]
        data = rng.standard_normal(file["pooled"][pooling].shape).astype(np.float32)
        for layer, strength in signal_layers.items():
            data[:, layer, :3] += strength * (2 * y[:, None] - 1)
        file["pooled"][pooling][...] = data.astype(file["pooled"][pooling].dtype)
    return y
