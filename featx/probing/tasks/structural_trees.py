"""The gold side and the scores of the structural probes (Hewitt & Manning 2019): tree distances and depths
from a sentence's heads, the minimum spanning tree of a distance matrix, and the paper's four measures.

A sentence's heads are 0-based indices within it, -1 for its root (``FeatureFile.word_heads``). Only a
*complete* tree is used: exactly one word marked -1 (the root), every other head a word of the sentence, and
every word reaching the root (no cycle). A sentence whose heads are unknown, partly unknown, point outside it
or form a cycle is skipped by the caller (counted in a note).

The scores follow the paper and its code. Each sentence gives a row of *stats*:

- ``length``: its number of words (the Spearman measures average per sentence length, lengths 5 to 50);
- ``hits`` and ``total``: distance probes, the gold edges the spanning tree of the predicted distances finds
  and the gold edges (UUAS = hits / total summed over sentences); depth probes, whether the word of smallest
  predicted depth is the root, out of 1 (root accuracy);
- ``spearman`` and ``n_spearman``: distance probes, the sum and count of each word's Spearman correlation
  between its predicted and gold distances to the words of its sentence (itself included, as the paper's code
  does: DSpr); depth probes, the one Spearman correlation between the sentence's predicted and gold depths
  (NSpr). Correlations of a constant row (a sentence of one scored word) are left out.

Words marked ``False`` in ``keep`` (punctuation, UPOS ``PUNCT``, when UPOS is stored) take no part in any score,
as in the paper: the gold edges are the spanning tree of the gold distances between the kept words (the gold
tree's edges between them whenever punctuation words head no other word, as in UD).
"""

from __future__ import annotations

import numpy as np

SPEARMAN_LENGTHS = (5, 50)  # DSpr and NSpr average over the sentence lengths in this range, as the paper
MIN_SENTENCES = 2  # an interval resamples whole sentences: below two scored ones it could not vary (none is given)
STATS = ("length", "hits", "total", "spearman", "n_spearman")


def complete_tree(heads: np.ndarray) -> bool:
    """True when ``heads`` (0-based, -1 the root) make one tree over the sentence's words."""
    heads = np.asarray(heads, np.int64)
    n = len(heads)
    if n == 0 or np.count_nonzero(heads == -1) != 1 or np.any((heads < -1) | (heads >= n)):
        return False
    return bool(np.all(tree_depths(heads) >= 0))


def tree_depths(heads: np.ndarray) -> np.ndarray:
    """Each word's number of edges to the root (the root: 0); -1 for a word that never reaches a root (a cycle,
    or a head outside the sentence)."""
    heads = np.asarray(heads, np.int64)
    n = len(heads)
    depths = np.full(n, -1, np.int64)
    for start in range(n):
        path: list[int] = []
        seen: set[int] = set()
        word, base = start, -1
        while 0 <= word < n and word not in seen:
            if depths[word] >= 0:
                base = int(depths[word])
                break
            if heads[word] == -1:
                depths[word] = base = 0
                break
            seen.add(word)
            path.append(word)
            word = int(heads[word])
        if base < 0:
            continue  # outside the sentence, or round a cycle
        for step, node in enumerate(reversed(path), start=1):
            depths[node] = base + step
    return depths


def tree_distances(heads: np.ndarray) -> np.ndarray:
    """``(n, n)`` number of edges between every two words of a complete tree (``complete_tree``)."""
    heads = np.asarray(heads, np.int64)
    n = len(heads)
    depths = tree_depths(heads)
    # the ancestors of each word, itself first: the distance is the two paths to the lowest common ancestor
    ancestors = []
    for word in range(n):
        chain, node = [word], word
        while heads[node] != -1:
            node = int(heads[node])
            chain.append(node)
        ancestors.append(chain)
    distances = np.zeros((n, n), np.int64)
    for i in range(n):
        on_path = set(ancestors[i])
        for j in range(i + 1, n):
            common = next(node for node in ancestors[j] if node in on_path)
            distances[i, j] = distances[j, i] = depths[i] + depths[j] - 2 * depths[common]
    return distances


def spanning_edges(distances: np.ndarray) -> set[tuple[int, int]]:
    """The undirected edges ``(i, j)``, ``i < j``, of a minimum spanning tree of a symmetric distance matrix
    (scipy's; a distance of zero or below counts as the smallest positive one, which scipy would read as no
    edge)."""
    from scipy.sparse.csgraph import minimum_spanning_tree

    n = len(distances)
    if n < 2:
        return set()
    weights = np.array(distances, dtype=np.float64)
    positive = weights[weights > 0]
    floor = (positive.min() if len(positive) else 1.0) * 1e-6
    weights = np.maximum(weights, floor)
    np.fill_diagonal(weights, 0.0)
    tree = minimum_spanning_tree(weights).tocoo()
    return {(int(min(i, j)), int(max(i, j))) for i, j in zip(tree.row, tree.col, strict=True)}


def row_spearman(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """The Spearman correlation of each row of ``predicted`` with the same row of ``gold`` (NaN: a constant row)."""
    from scipy.stats import rankdata

    a = rankdata(predicted, axis=-1)
    b = rankdata(gold, axis=-1)
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (a * b).sum(axis=-1) / np.where(denominator > 0, denominator, 1), np.nan)


def distance_stats(predicted: np.ndarray, gold: np.ndarray, keep: np.ndarray) -> tuple[float, ...]:
    """The stats row (``STATS``) of one sentence's predicted ``(n, n)`` distances against its gold ones."""
    kept = np.flatnonzero(keep)
    p, g = predicted[np.ix_(kept, kept)], gold[np.ix_(kept, kept)]
    gold_edges = spanning_edges(g)
    hits = len(gold_edges & spanning_edges(p))
    rho = row_spearman(p, g) if len(kept) > 1 else np.zeros(0)
    rho = rho[np.isfinite(rho)]
    return (float(len(keep)), float(hits), float(len(gold_edges)), float(rho.sum()), float(len(rho)))


def depth_stats(predicted: np.ndarray, gold: np.ndarray, keep: np.ndarray) -> tuple[float, ...]:
    """The stats row (``STATS``) of one sentence's predicted depths against its gold ones (the root: depth 0)."""
    kept = np.flatnonzero(keep)
    p, g = predicted[kept], gold[kept]
    rooted = bool(np.any(g == 0)) and len(kept) > 0  # a root left out (punctuation): no root to find
    hit = float(rooted and g[int(np.argmin(p))] == 0)
    rho = row_spearman(p, g) if len(kept) > 1 else np.nan
    finite = bool(np.isfinite(rho))
    return (float(len(keep)), hit, float(rooted), float(rho) if finite else 0.0, float(finite))


def scores(stats: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float]:
    """``(attachment, spearman)`` of a stats table (one row per sentence, ``STATS`` columns), each sentence
    counted ``weights`` times (a bootstrap resample; None: once). ``attachment`` is UUAS or root accuracy,
    ``spearman`` DSpr or NSpr: the mean correlation per sentence length, averaged over the lengths 5 to 50
    present (NaN when none is)."""
    w = np.ones(len(stats)) if weights is None else np.asarray(weights, np.float64)
    total = float(w @ stats[:, 2])
    attachment = float(w @ stats[:, 1]) / total if total > 0 else float("nan")
    lengths = stats[:, 0].astype(np.int64)
    inside = _in_spearman(stats) & (w > 0)
    if not inside.any():
        return attachment, float("nan")
    high = SPEARMAN_LENGTHS[1]
    sums = np.bincount(lengths[inside], weights=(w * stats[:, 3])[inside], minlength=high + 1)
    counts = np.bincount(lengths[inside], weights=(w * stats[:, 4])[inside], minlength=high + 1)
    present = counts > 0
    return attachment, float(np.mean(sums[present] / counts[present]))


def _in_spearman(stats: np.ndarray) -> np.ndarray:
    """The sentences the Spearman measure averages: of 5 to 50 words, with a correlation scored."""
    lengths = stats[:, 0].astype(np.int64)
    low, high = SPEARMAN_LENGTHS
    return (lengths >= low) & (lengths <= high) & (stats[:, 4] > 0)


def scored_sentences(stats: np.ndarray) -> tuple[int, int]:
    """How many sentences of a stats table each measure of ``scores`` is computed from: those with a gold edge
    (UUAS) or a scored root (root accuracy), and those the Spearman measure averages (``_in_spearman``)."""
    return int(np.count_nonzero(stats[:, 2] > 0)), int(np.count_nonzero(_in_spearman(stats)))


def bootstrap_scores(stats: np.ndarray, n_bootstrap: int, seed: int) -> tuple[tuple[float, float], ...]:
    """The 95% percentile intervals ``((low, high), (low, high))`` of ``scores`` over resamples of whole
    sentences (seeded); NaN for a measure computed from fewer than ``MIN_SENTENCES`` sentences, whose resamples
    could not vary (a zero-width interval from one sentence would read as certainty)."""
    rng = np.random.default_rng(seed + 3571)
    n = len(stats)
    draws = np.array([scores(stats, np.bincount(rng.integers(0, n, n), minlength=n)) for _ in range(n_bootstrap)])
    out = []
    for column, units in enumerate(scored_sentences(stats)):
        values = draws[:, column][np.isfinite(draws[:, column])] if len(draws) else np.zeros(0)
        out.append(
            (float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5)))
            if len(values) and units >= MIN_SENTENCES
            else (float("nan"),) * 2
        )
    return tuple(out)  # type: ignore[return-value]
