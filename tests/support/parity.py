"""How far a family's features are from a plain ``transformers`` forward of each row alone (the family tests
and ``scripts/family_parity.py``), and how far featx's own encoders are from transformers' on padded rows (the
native tests)."""

from __future__ import annotations

import numpy as np

import featx
from featx.extraction import ExtractConfig, extract


def pooled_reference(states: list[np.ndarray], pooling: str, at: int | None = None) -> np.ndarray:
    """Each row's ``(layers, tokens, width)`` states pooled over its tokens: ``(rows, layers, width)``; ``at``: the
    token of ``--pool-at index:N`` (pooling ``at``)."""
    pick = {
        "cls": lambda s: s[:, 0],
        "mean": lambda s: s.mean(1),
        "max": lambda s: s.max(1),
        "last": lambda s: s[:, -1],
        "at": lambda s: s[:, at],
    }[pooling]
    return np.stack([pick(row) for row in states])


def pool_at_index(features) -> int | None:
    """The N of a file's ``--pool-at index:N`` (None without one; the parity tests use no other kind)."""
    spec = features.attrs.get("pool_at")
    if not spec:
        return None
    kind, _, value = str(spec).partition(":")
    assert kind == "index", f"the parity helpers read --pool-at index:N only, not {spec}"
    return int(value)


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
    only; a truncated file's lower layers are checked against the full extraction instead), ``at`` (``--pool-at
    index:N``) against each row's token N."""
    worst = 0.0
    with featx.open(summary.output) as features:
        for pooling in features.poolings:
            if pooling == "pooler":
                top = len(references[0]) - 1
                assert references.pooler is not None, "featx stored a pooler the plain model does not have"
                if top in features.layers:
                    worst = max(worst, relative_error(features.features(pooling, top), references.pooler))
                continue
            expected = pooled_reference(references, pooling, pool_at_index(features))
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


def head_reference(family, folder, texts: list[str]) -> list[np.ndarray]:
    """Site ``attn_heads`` by hand from a plain eager forward of each row alone (``output_attentions``): per row,
    ``(layers 1..N, tokens, 3 * heads)`` float64, each head's entropy of its attention (nats), its attention to the
    first token and to the tokenizer's SEP tokens (the last token where it has no SEP)."""
    import torch
    from transformers import AutoTokenizer

    from support.families import reference_model

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = reference_model(family, folder)
    model.config._attn_implementation = "eager"  # SDPA returns no probabilities
    out = []
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(text, return_tensors="pt")
            ids = encoded["input_ids"][0]
            attentions = model(**encoded, output_attentions=True).attentions
            sep = tokenizer.sep_token_id
            to = (ids == sep) if sep is not None else torch.arange(len(ids)) == len(ids) - 1
            layers = []
            for probs in attentions:
                p = probs[0].double()  # (heads, queries, keys)
                entropy = -torch.special.xlogy(p, p).sum(-1)
                layers.append(torch.cat([entropy, p[..., 0], p[..., to].sum(-1)]).T.numpy())
            out.append(np.stack(layers))
    return out
