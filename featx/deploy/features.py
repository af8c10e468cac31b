"""The feature matrix a deployed probe reads for one layer spec and pooling: from a features file (the
probes' own ``pooled_block``, so sentence pairs get the same SentEval feature) or from in-memory embeddings
(``featx.extraction.embed``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..probing import pooled_block, senteval
from ..selection import LayerSpec
from ..store import PAIR_B_SITE, FeatureFile, contrast_site


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


def stored_arc_matrix(features: FeatureFile, spec: LayerSpec, pooling: str, pairs: np.ndarray) -> np.ndarray:
    """``[h_head, h_dep, h_head * h_dep]`` of the ``(n, 2)`` word ``pairs`` from one stored layer and word pooling,
    as ``featx probe --arcs`` builds them (``probing.arc_features``)."""
    from ..probing import arc_features

    (layer,) = spec.layers
    return arc_features(features.word_features(pooling, layer), pairs)


def matrix_reader(level: str):
    """The function that reads a plan's rows of one candidate: stored rows, words or word pairs (arcs)."""
    return {"word": stored_word_matrix, "arc": stored_arc_matrix}.get(level, stored_matrix)


def embedded_matrix(
    embeddings: Any, layers: tuple[int, ...], kind: str, pooling: str, pair_mode: str | None, contrast: bool = False
) -> Any:
    """The same matrix from an ``Embeddings`` of ``featx.extraction.embed``: side a and side b of a separate-mode
    pair become ``[u, v, |u - v|, u * v]`` as in the features file; ``contrast``: answer 0's states minus
    answer 1's (``probing.contrast.contrast_difference``)."""
    blocks = []
    for layer in layers:
        if contrast:
            first = embeddings.array(layer, pooling)
            blocks.append(first - embeddings.array(layer, pooling, site=contrast_site(1)))
        elif pair_mode == "separate":
            u, v = embeddings.array(layer, pooling), embeddings.array(layer, pooling, site=PAIR_B_SITE)
            blocks.append(senteval(u, v))
        else:
            blocks.append(np.asarray(embeddings.array(layer, pooling), dtype=np.float32))
    if kind == "stack":
        return blocks
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


__all__ = ["embedded_matrix", "matrix_reader", "stored_arc_matrix", "stored_matrix", "stored_word_matrix"]
