"""The head selector's scorer (``featx fit --label head --arcs``): a linear score of each (candidate head, word) pair
of a sentence, trained as a softmax over every candidate of each word (its sentence's other words, and the word
itself standing for the root), the gold head against all the others: a conditional logit, classical and linear on
frozen word vectors.

A pair's features (``selector_features``) are ``featx probe --arcs``'s ``[h_head, h_dep, h_head * h_dep]``
(``probing.arc_features``), then the head's and the word's vectors on the side the head lies on (``h_head`` and
``h_dep`` if the head is left of the word, again if right: which words take their head on which side), then the
signed offset (head - word) in buckets (``OFFSET_BOUNDS``: |offset| 1, 2, 3, 4, 5-7, 8-15, 16+ on each side, and 0:
the root), one-hot. Without the offset a linear pair score has no way to weigh how far apart two words are.

It is fitted on word vectors standardised over the training words, with an L2 penalty ``||w||^2 / (2 C n)`` (the
logistic regressions' objective, ``n`` the words), by L-BFGS; ``fit_path`` fits a warm-started path of C values.
The solution becomes a linear ``Head`` over the raw pair features (``to_head``: exact, the standardisation folded
in), whose arc score ``select_heads`` maximises over each word's candidates.
"""

from __future__ import annotations

import numpy as np

from ..probing import arc_features

OFFSET_BOUNDS = (1, 2, 3, 4, 5, 8, 16)  # the lower bounds of the |offset| buckets on each side
PAIR_ELEMENTS = 200_000  # candidate scores (sentences x length^2) of one padded batch of sentences of like length
# L-BFGS steps per C, and its stop on the change of the loss: on UD GUM, 150 steps and a 100 times tighter stop
# gave the same UAS to 3 decimals in 2.8 times the time
MAX_ITER, LOSS_CHANGE = 50, 1e-5
PARTS = ("head", "product", "head_left", "head_right", "dep_left", "dep_right", "offset")


def n_buckets(bounds=OFFSET_BOUNDS) -> int:
    return 2 * len(bounds) + 1


def vector_width(n_features: int, bounds) -> int:
    """The word vectors' width of a head selector's ``n_features`` pair features: ``7 d + buckets`` with offset
    ``bounds``, ``3 d`` without (a head selector of an earlier featx)."""
    return (n_features - n_buckets(bounds)) // 7 if bounds is not None else n_features // 3


def offset_bucket(offset: np.ndarray, bounds=OFFSET_BOUNDS) -> np.ndarray:
    """The bucket of each signed offset (head - word): 0 the root (offset 0), 1.. the head to the left, then right."""
    offset = np.asarray(offset, np.int64)
    size = np.searchsorted(np.asarray(bounds, np.int64), np.abs(offset), side="right")
    return np.where(offset < 0, size, np.where(offset > 0, size + len(bounds), 0))


def selector_features(states: np.ndarray, pairs: np.ndarray, bounds=OFFSET_BOUNDS) -> np.ndarray:
    """``[h_head, h_dep, h_head * h_dep, h_head * left, h_head * right, h_dep * left, h_dep * right, bucket]`` of
    each ``(head, dependent)`` pair of word indices (float32; ``left``: the head lies left of the word)."""
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    offset = pairs[:, 0] - pairs[:, 1]
    left, right = (offset < 0)[:, None], (offset > 0)[:, None]
    head, dependent = (np.asarray(states[pairs[:, i]], np.float32) for i in (0, 1))
    onehot = np.zeros((len(pairs), n_buckets(bounds)), np.float32)
    onehot[np.arange(len(pairs)), offset_bucket(offset, bounds)] = 1.0
    sides = [head * left, head * right, dependent * left, dependent * right]
    return np.concatenate([arc_features(states, pairs), *sides, onehot], axis=1)


class Sentences:
    """Padded torch batches of some sentences' standardised word vectors and each word's gold head (its index in
    the sentence; -100 for a word whose attachment is unknown), sentences of similar length together."""

    def __init__(self, torch, X: np.ndarray, offsets: np.ndarray, gold: np.ndarray, sentences: np.ndarray):
        lengths = offsets[sentences + 1] - offsets[sentences]
        order = np.asarray(sentences)[np.argsort(lengths, kind="stable")]
        self.batches: list[tuple] = []
        start = 0
        while start < len(order):
            width = int(offsets[order[start] + 1] - offsets[order[start]])
            stop = start + 1
            while stop < len(order):
                longest = int(offsets[order[stop] + 1] - offsets[order[stop]])
                if (stop - start + 1) * longest * longest > PAIR_ELEMENTS:
                    break
                width, stop = longest, stop + 1
            self.batches.append(self._batch(torch, X, offsets, gold, order[start:stop], width))
            start = stop
        self.n = sum(int((batch[1] >= 0).sum()) for batch in self.batches)  # the words with a known head

    @staticmethod
    def _batch(torch, X, offsets, gold, sentences, width: int) -> tuple:
        V = np.zeros((len(sentences), width, X.shape[1]), np.float32)
        T = np.full((len(sentences), width), -100, np.int64)
        for row, s in enumerate(sentences.tolist()):
            a, z = int(offsets[s]), int(offsets[s + 1])
            V[row, : z - a], known = X[a:z], gold[a:z] >= 0
            T[row, : z - a][known] = gold[a:z][known] - a
        index = np.arange(width)
        offset = index[:, None] - index[None, :]  # [candidate, word]: head - word
        valid = index[None, :] < (offsets[sentences + 1] - offsets[sentences])[:, None]
        return (
            torch.from_numpy(V), torch.from_numpy(T), torch.from_numpy(valid),
            torch.from_numpy(offset_bucket(offset)), torch.from_numpy((offset < 0).astype(np.float32)),
            torch.from_numpy((offset > 0).astype(np.float32)),
        )  # fmt: skip


def _scores(torch, params: dict, batch: tuple):
    """``(b, candidate, word)`` scores of one batch (an invalid candidate: a very low score)."""
    V, _, valid, bucket, left, right = batch
    head = V @ torch.stack([params["head"], params["head_left"], params["head_right"]], dim=1)
    dependent = V @ torch.stack([params["dep_left"], params["dep_right"]], dim=1)
    S = torch.bmm(V * params["product"], V.transpose(1, 2)) + head[:, :, :1] + params["offset"][bucket]
    S = S + (head[:, :, 1:2] + dependent[:, None, :, 0]) * left + (head[:, :, 2:3] + dependent[:, None, :, 1]) * right
    return S.masked_fill(~valid[:, :, None], -1e30)


def fit_selector(sentences: Sentences, C: float, init: dict | None = None) -> dict:
    """The L2-penalised conditional logit on ``sentences`` (L-BFGS from ``init``, else zeros): numpy arrays."""
    import torch

    width = sentences.batches[0][0].shape[2]
    sizes = {name: n_buckets() if name == "offset" else width for name in PARTS}
    params = {
        name: torch.tensor(init[name] if init else np.zeros(sizes[name], np.float32), requires_grad=True)
        for name in PARTS
    }
    n = max(sentences.n, 1)
    solver = torch.optim.LBFGS(
        list(params.values()), max_iter=MAX_ITER, history_size=10, line_search_fn="strong_wolfe",
        tolerance_grad=1e-5, tolerance_change=LOSS_CHANGE,
    )  # fmt: skip

    def objective():
        solver.zero_grad()
        loss = sum(
            torch.nn.functional.cross_entropy(_scores(torch, params, b), b[1], ignore_index=-100, reduction="sum")
            for b in sentences.batches
        ) / n + sum((p * p).sum() for p in params.values()) / (2 * C * n)
        loss.backward()
        return loss

    solver.step(objective)
    return {name: p.detach().numpy().copy() for name, p in params.items()}


def uas_of(params: dict, sentences: Sentences) -> float:
    """The share of ``sentences``' words with a known head whose best-scoring candidate is that head."""
    import torch

    right = total = 0
    tensors = {name: torch.from_numpy(value) for name, value in params.items()}
    with torch.no_grad():
        for batch in sentences.batches:
            known = batch[1] >= 0
            best = _scores(torch, tensors, batch).argmax(dim=1)
            right, total = right + int((best[known] == batch[1][known]).sum()), total + int(known.sum())
    return right / total if total else float("nan")


def fit_path(fitting: Sentences, cs, held: Sentences | None = None) -> list[tuple[float, dict, float]]:
    """``(C, params, UAS on held)`` along ``cs`` from the smallest, each fit warm-started from the one before."""
    path, init = [], None
    for C in sorted(float(c) for c in cs):
        init = fit_selector(fitting, C, init)
        path.append((C, init, uas_of(init, held) if held is not None else float("nan")))
    return path


def standardiser(states: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean and standard deviation (float64; a constant column: 1) of ``words``' vectors."""
    block = np.asarray(states[words], np.float64)
    mean, scale = block.mean(axis=0), block.std(axis=0)
    return mean, np.where(scale > 0, scale, 1.0)


def to_head(params: dict, mean: np.ndarray, scale: np.ndarray, C: float):
    """The linear ``Head`` over the raw ``selector_features`` that scores every pair as ``params`` does on the
    standardised vectors, up to a constant per word (which no argmax over its candidates sees): class ``arc``'s
    coefficients; ``no-arc``'s zero."""
    from .head import Head

    u, v = params["head"] / scale, params["product"] / scale**2
    shift = {side: float(params[f"head_{side}"] @ (mean / scale) + params[f"dep_{side}"] @ (mean / scale))
             for side in ("left", "right")}  # fmt: skip
    offset = np.asarray(params["offset"], np.float64).copy()
    size = len(OFFSET_BOUNDS)
    offset[1 : size + 1] -= shift["left"]
    offset[size + 1 :] -= shift["right"]
    coef = np.concatenate([
        u - v * mean, -v * mean, v, *(params[name] / scale for name in PARTS[2:6]), offset,
    ])  # fmt: skip
    width = len(coef)
    weights = {"coef": np.stack([np.zeros(width), coef], axis=1), "intercept": np.zeros(2)}
    return Head("logreg", np.zeros(width, np.float32), np.ones(width, np.float32), weights, ["no-arc", "arc"], C)


__all__ = [
    "OFFSET_BOUNDS",
    "Sentences",
    "fit_path",
    "fit_selector",
    "n_buckets",
    "offset_bucket",
    "selector_features",
    "standardiser",
    "to_head",
    "uas_of",
    "vector_width",
]
