"""How far a family's features are from a plain ``transformers`` forward of each row alone (the family tests
and ``scripts/family_parity.py``)."""

from __future__ import annotations

import numpy as np

import featx
from featx.extraction import ExtractConfig, extract


def pooled_reference(states: list[np.ndarray], pooling: str) -> np.ndarray:
    pick = {
        "cls": lambda s: s[:, 0],
        "mean": lambda s: s.mean(1),
        "max": lambda s: s.max(1),
        "last": lambda s: s[:, -1],
    }[pooling]
    return np.stack([pick(row) for row in states])


def relative_error(got, expected) -> float:
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.abs(np.asarray(got, dtype=np.float64) - expected).max() / max(np.abs(expected).max(), 1e-12))


def run_family(model, corpus, output, **options):
    options.setdefault("store_dtype", "float32")
    return extract(
        ExtractConfig(corpus=corpus, output=output, model=str(model), progress=False, batch_size=5, **options)
    )


def parity(summary, references) -> float:
    worst = 0.0
    with featx.open(summary.output) as features:
        for pooling in features.poolings:
            if pooling == "pooler":
                continue
            expected = pooled_reference(references, pooling)
            for layer in features.layers:
                worst = max(worst, relative_error(features.features(pooling, layer), expected[:, layer]))
    return worst
