"""The feature matrix a deployed probe reads for one layer spec and pooling: from a features file (the
probes' own ``pooled_block``, so sentence pairs get the same SentEval feature) or from in-memory embeddings
(``featx.extraction.embed``)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..probing import pooled_block, senteval
from ..selection import LayerSpec
from ..store import PAIR_B_SITE, FeatureFile, FeatureRead, contrast_site


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


def require_finite_candidates(path, candidates: list[tuple[LayerSpec, str]], level: str) -> None:
    """Refuse, before the first candidate is scored, a file holding inf or NaN in a matrix any candidate reads
    (``FeatureFile.require_finite``): each layer of its spec, pooled as the probes read it, or its word vectors
    (words and arcs)."""
    with FeatureFile(path) as features:
        _require_finite(features, candidates, level)


def _require_finite(features: FeatureFile, candidates: list[tuple[LayerSpec, str]], level: str) -> None:
    from ..probing import block_reads

    if level in ("word", "arc"):
        reads = [FeatureRead("words", layer, pooling) for spec, pooling in candidates for layer in spec.layers]
    else:
        reads = [
            read
            for spec, pooling in candidates
            for layer in spec.layers
            for read in block_reads(features, pooling, layer)
        ]
    features.require_finite(reads)


def checked_candidates(path, candidates: list[tuple[LayerSpec, str]], level: str, compare: bool = True) -> list[int]:
    """Refuse, before the first candidate is scored, a file holding inf or NaN in a matrix any candidate reads;
    and for each candidate, the index of the first candidate that reads the same vectors (its own index where none
    does): a candidate scored once gives those the same scores.

    Word poolings read the same vector where a word is one token (its first, last and mean subword), so a file whose
    every word is one token (a word-level vocabulary, a toy treebank) has each layer's word candidates three times
    over. There (word and arc candidates, with ``compare``) each word layer a candidate reads is read once, whole, by
    ``word_features``, which refuses a non-finite value with the scan's error, and compared by a 128-bit BLAKE2b
    digest of its values as stored (``FeatureFile.store_dtype``; float16 to float32 is exact, so equal stored
    layers are equal float32 ones and unequal ones unequal): equal layers give equal matrices of any words or word
    pairs. Anywhere else the matrices are only
    scanned (``require_finite_candidates``) and each candidate is its own. Before, a matrix was read three times
    (the scan, the comparison, the scoring)."""
    own = list(range(len(candidates)))
    with FeatureFile(path) as features:
        one_token = compare and level in ("word", "arc") and features.has_words
        if not (one_token and bool(np.all(features.word_n_subwords() == 1))):
            _require_finite(features, candidates, level)
            return own
        digests: dict[tuple[str, int], bytes] = {}
        first_of: dict[tuple[bytes, ...], int] = {}
        for index, (spec, pooling) in enumerate(candidates):
            for layer in spec.layers:
                if (pooling, layer) not in digests:
                    # as stored: a float16 file's layers hash half the bytes, unconverted (21 of GUM: 1.7 -> 0.8 s)
                    matrix = np.ascontiguousarray(features.word_features(pooling, layer, features.store_dtype))
                    digest = hashlib.blake2b(matrix.data, digest_size=16)  # the array's own buffer: no copy
                    digest.update(repr((matrix.shape, matrix.dtype.str)).encode())
                    digests[pooling, layer] = digest.digest()
            own[index] = first_of.setdefault(tuple(digests[pooling, layer] for layer in spec.layers), index)
    return own


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


__all__ = [
    "checked_candidates",
    "embedded_matrix",
    "matrix_reader",
    "require_finite_candidates",
    "stored_arc_matrix",
    "stored_matrix",
    "stored_word_matrix",
]
