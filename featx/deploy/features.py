"""The feature matrix a deployed probe reads for one layer spec and pooling: from a features file (the
probes' own ``pooled_block``, so sentence pairs get the same SentEval feature) or from in-memory embeddings
(``featx.extraction.embed``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..probing import pooled_block, senteval
from ..selection import LayerSpec
from ..store import PAIR_B_SITE, FeatureFile


def stored_matrix(features: FeatureFile, spec: LayerSpec, pooling: str, rows: np.ndarray | None = None) -> Any:
    """One matrix (single or concatenated layers) or, for a stack, one matrix per layer; float32."""
    blocks = []
    for layer in spec.layers:
        block = pooled_block(features, pooling, layer)
        blocks.append(np.asarray(block if rows is None else block[rows], dtype=np.float32))
    if spec.kind == "stack":
        return blocks
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


def stored_word_matrix(features: FeatureFile, spec: LayerSpec, pooling: str, words: np.ndarray | None = None) -> Any:
    """The stored word vectors of one layer and word pooling (first, last, mean): all words, or ``words``."""
    (layer,) = spec.layers
    matrix = features.word_features(pooling, layer)
    return matrix if words is None else np.ascontiguousarray(matrix[words])


def embedded_matrix(embeddings: Any, layers: tuple[int, ...], kind: str, pooling: str, pair_mode: str | None) -> Any:
    """The same matrix from an ``Embeddings`` of ``featx.extraction.embed``: side a and side b of a separate-mode
    pair become ``[u, v, |u - v|, u * v]`` as in the features file."""
    blocks = []
    for layer in layers:
        if pair_mode == "separate":
            u, v = embeddings.array(layer, pooling), embeddings.array(layer, pooling, site=PAIR_B_SITE)
            blocks.append(senteval(u, v))
        else:
            blocks.append(np.asarray(embeddings.array(layer, pooling), dtype=np.float32))
    if kind == "stack":
        return blocks
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


__all__ = ["embedded_matrix", "stored_matrix", "stored_word_matrix"]
