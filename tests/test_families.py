"""Every supported family extracts like a plain ``transformers`` forward of each row alone.

One tiny random model per family (``families.py``), built once per session. fp32 with and without
the CPU fast path must match the reference to 1e-4 relative to the activations' scale (batching
several rows of different lengths together, so this is also the padding-invariance check); bf16 must
run and stay close.
"""

from __future__ import annotations

import numpy as np
import pytest

import featx
from featx.extraction import ExtractConfig, extract

from conftest import SENTENCES, write_csv
from families import FAMILIES, build_family, reference_states

TEXTS = [row[0] for row in SENTENCES]
TOLERANCE = 1e-4


@pytest.fixture(scope="session")
def family_models(tmp_path_factory):
    cache = {}

    def get(family):
        if family.name not in cache:
            cache[family.name] = build_family(family, tmp_path_factory.mktemp(family.name))
        return cache[family.name]

    return get


@pytest.fixture(scope="session")
def family_references(family_models):
    cache = {}

    def get(family):
        if family.name not in cache:
            cache[family.name] = reference_states(family, family_models(family), TEXTS)
        return cache[family.name]

    return get


@pytest.fixture(scope="module")
def family_corpus(tmp_path_factory):
    return write_csv(tmp_path_factory.mktemp("family-corpus") / "corpus.csv", SENTENCES)


def pooled_reference(states: list[np.ndarray], pooling: str) -> np.ndarray:
    pick = {"cls": lambda s: s[:, 0], "mean": lambda s: s.mean(1), "max": lambda s: s.max(1),
            "last": lambda s: s[:, -1]}[pooling]
    return np.stack([pick(row) for row in states])


def relative_error(got, expected) -> float:
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.abs(np.asarray(got, dtype=np.float64) - expected).max() / max(np.abs(expected).max(), 1e-12))


def run_family(model, corpus, output, **options):
    options.setdefault("store_dtype", "float32")
    return extract(ExtractConfig(corpus=corpus, output=output, model=str(model), progress=False,
                                 batch_size=5, **options))


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


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
@pytest.mark.parametrize("fast_path", ["on", "off"])
def test_family_matches_plain_forward_fp32(family, fast_path, family_models, family_references, family_corpus,
                                           tmp_path, monkeypatch):
    monkeypatch.setenv("FEATX_ONEDNN", "1" if fast_path == "on" else "0")
    summary = run_family(family_models(family), family_corpus, tmp_path / "out.h5")
    assert summary.rows == len(TEXTS)
    assert parity(summary, family_references(family)) <= TOLERANCE
