"""How far a family's features are from a plain ``transformers`` forward of each row alone (the family tests
and ``scripts/family_parity.py``), and how far featx's own encoders are from transformers' on padded rows (the
native tests)."""

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
    """Largest relative error of every stored pooling and layer against ``references`` (``families.RowStates``):
    ``pooler`` at the model's top layer against the model's own ``pooler_output`` (transformers defines it there
    only; a truncated file's lower layers are checked against the full extraction instead)."""
    worst = 0.0
    with featx.open(summary.output) as features:
        for pooling in features.poolings:
            if pooling == "pooler":
                top = len(references[0]) - 1
                assert references.pooler is not None, "featx stored a pooler the plain model does not have"
                if top in features.layers:
                    worst = max(worst, relative_error(features.features(pooling, top), references.pooler))
                continue
            expected = pooled_reference(references, pooling)
            for layer in features.layers:
                worst = max(worst, relative_error(features.features(pooling, layer), expected[:, layer]))
    return worst


def padded_ids(pad: int):
    """Three rows of ``<s>``-like 0, tokens, ``</s>``-like 2: two padded with ``pad`` (3 and 5 pads), one not."""
    import torch

    return torch.tensor(
        [[0, 40, 41, 42, 43, 2, pad, pad], [0, 44, 2, pad, pad, pad, pad, pad], [0, 45, 46, 47, 48, 49, 50, 2]]
    )


def largest_difference(native, reference, ids, pad: int) -> float:
    """Largest absolute difference between two encoders' outputs for ``ids`` (``pad`` marks padding): every hidden
    state at the real tokens, and the pooler output where the native encoder has a pooler."""
    import torch

    mask = (ids != pad).long()
    with torch.inference_mode():
        got = native(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        want = reference(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    assert len(got.hidden_states) == len(want.hidden_states)
    real = mask.bool()
    worst = max(float((a - b)[real].abs().max()) for a, b in zip(got.hidden_states, want.hidden_states, strict=True))
    if got.pooler_output is not None:
        worst = max(worst, float((got.pooler_output - want.pooler_output).abs().max()))
    return worst
