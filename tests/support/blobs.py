"""Gaussian blobs: ``k`` classes around random centres in ``d`` dimensions, for the softmax solvers' tests."""

from __future__ import annotations

import numpy as np


def blobs(n=600, d=12, k=3, seed=0, separation=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    centres = rng.normal(size=(k, d)) * separation
    X = (centres[y] + rng.normal(size=(n, d))).astype(np.float32)
    return X, y
