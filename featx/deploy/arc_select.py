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
from .arc_tree import tree_heads

OFFSET_BOUNDS = (1, 2, 3, 4, 5, 8, 16)  # the lower bounds of the |offset| buckets on each side
PAIR_ELEMENTS = 50_000  # candidate scores (sentences x length^2) of one padded batch of sentences of like length
WIDTH_SLACK = 1.1  # a batch's longest sentence: at most this times its shortest, plus 2 (little padding)
# L-BFGS runs until the objective's gradient is small in every coordinate (GRADIENT_TOLERANCE, on the per-word
# loss and penalty: featx's own logistic probes' 1e-3; at 1e-4 UD GUM's fit took 1.85x as long for a test UAS
# 0.0009 higher, inside its interval), at most MAX_ITER steps (a cap that UD GUM's fits stay far below), or until
# float32 arithmetic moves the objective no more (LOSS_CHANGE); a long history (HISTORY steps) takes a fifth fewer
# evaluations there
MAX_ITER, GRADIENT_TOLERANCE, LOSS_CHANGE, HISTORY = 1000, 1e-3, 1e-9, 100
PARTS = ("head", "product", "head_left", "head_right", "dep_left", "dep_right", "offset")
PARTS_SCORED = ("head", "dep", "head_left", "head_right", "dep_left", "dep_right")  # pair_scores' linear parts


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
    the sentence; -100 for a word whose attachment is unknown), sentences of similar length together: a batch holds
    at most ``PAIR_ELEMENTS`` candidate scores, and its longest sentence is at most ``WIDTH_SLACK`` times its
    shortest (plus 2), so that little of it is padding. Built once, reused by every fit and score of a C path."""

    def __init__(self, torch, X: np.ndarray, offsets: np.ndarray, gold: np.ndarray, sentences: np.ndarray):
        lengths = offsets[sentences + 1] - offsets[sentences]
        order = np.asarray(sentences)[np.argsort(lengths, kind="stable")]
        ordered = np.sort(lengths)
        self.batches: list[dict] = []
        start = 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and (stop - start + 1) * int(ordered[stop]) ** 2 <= PAIR_ELEMENTS:
                if ordered[stop] > ordered[start] * WIDTH_SLACK + 2:
                    break
                stop += 1
            self.batches.append(self._batch(torch, X, offsets, gold, order[start:stop], int(ordered[stop - 1])))
            start = stop
        self.n = sum(int(batch["known"].sum()) for batch in self.batches)  # the words with a known head
        self.width = X.shape[1]

    @staticmethod
    def _batch(torch, X, offsets, gold, sentences, width: int) -> dict:
        V = np.zeros((len(sentences), width, X.shape[1]), np.float32)
        T = np.full((len(sentences), width), -100, np.int64)
        for row, s in enumerate(sentences.tolist()):
            a, z = int(offsets[s]), int(offsets[s + 1])
            V[row, : z - a], known = X[a:z], gold[a:z] >= 0
            T[row, : z - a][known] = gold[a:z][known] - a
        index = np.arange(width)
        offset = index[:, None] - index[None, :]  # [candidate, word]: head - word
        valid = index[None, :] < (offsets[sentences + 1] - offsets[sentences])[:, None]
        V_, T_ = torch.from_numpy(V), torch.from_numpy(T)
        return {
            "V": V_, "flat": V_.reshape(-1, X.shape[1]), "gold": T_.clamp(min=0)[:, None, :], "known": T_ >= 0,
            "weight": (T_ >= 0).to(torch.float32)[:, None, :], "invalid": torch.from_numpy(~valid)[:, :, None],
            "bucket": torch.from_numpy(offset_bucket(offset)), "lengths": offsets[sentences + 1] - offsets[sentences],
            "left": torch.from_numpy((offset < 0).astype(np.float32)),
            "right": torch.from_numpy((offset > 0).astype(np.float32)),
        }  # fmt: skip


def _unpacked(theta, width: int) -> tuple:
    """The product weights, the five linear parts (head, head and word by side) as rows, and the bucket weights of
    a flat parameter vector laid out as ``PARTS``."""
    parts = theta[: 6 * width].reshape(6, width)
    return parts[1], parts[[0, 2, 3, 4, 5]], theta[6 * width :]


def _scores(torch, theta, batch: dict, width: int):
    """``(b, candidate, word)`` scores of one batch (an invalid candidate: a very low score)."""
    product, linear, offset = _unpacked(theta, width)
    V = batch["V"]
    b, length, _ = V.shape
    S = torch.bmm(V * product, V.transpose(1, 2))
    parts = (linear @ batch["flat"].T).T.reshape(b, length, 5)  # a thin product is fastest in this orientation
    S += parts[:, :, 0:1] + offset[batch["bucket"]]
    S += (parts[:, :, 1:2] + parts[:, None, :, 3]) * batch["left"]
    S += (parts[:, :, 2:3] + parts[:, None, :, 4]) * batch["right"]
    return S.masked_fill_(batch["invalid"], -1e30)


def _loss_and_gradient(torch, theta, sentences: Sentences):
    """The summed negative log-likelihood of the gold heads and its gradient in ``theta``, written out (the
    softmax's ``probabilities - one-hot gold`` through the pair score), which reads each batch's vectors fewer
    times than autograd would."""
    width = sentences.width
    loss = torch.zeros((), dtype=torch.float64)
    product_grad, linear_grad = torch.zeros(width), torch.zeros(5, width)
    offset_grad = torch.zeros(n_buckets(), dtype=torch.float64)
    for batch in sentences.batches:
        S = _scores(torch, theta, batch, width)
        total = torch.logsumexp(S, dim=1, keepdim=True)
        loss += float(((total - S.gather(1, batch["gold"])) * batch["weight"]).sum())
        G = S.sub_(total).exp_().scatter_add_(1, batch["gold"], -batch["weight"]).mul_(batch["weight"])
        left, right = G * batch["left"], G * batch["right"]
        per = torch.stack([G.sum(2), left.sum(2), right.sum(2), left.sum(1), right.sum(1)], dim=-1)
        linear_grad += per.reshape(-1, 5).T @ batch["flat"]
        product_grad += (torch.bmm(G, batch["V"]) * batch["V"]).sum((0, 1))
        offset_grad += torch.bincount(batch["bucket"].reshape(-1), G.sum(0).reshape(-1), n_buckets())
    rows = [linear_grad[0], product_grad, *linear_grad[1:]]
    return loss, torch.cat([*rows, offset_grad.to(torch.float32)])


def fit_selector(sentences: Sentences, C: float, init: dict | None = None) -> dict:
    """The L2-penalised conditional logit on ``sentences`` (L-BFGS from ``init``, else zeros): numpy arrays."""
    import torch

    width = sentences.width
    start = np.concatenate([init[name] for name in PARTS]) if init else np.zeros(6 * width + n_buckets())
    theta = torch.tensor(start, dtype=torch.float32, requires_grad=True)
    n = max(sentences.n, 1)
    solver = torch.optim.LBFGS(
        [theta], max_iter=MAX_ITER, history_size=HISTORY, line_search_fn="strong_wolfe",
        tolerance_grad=GRADIENT_TOLERANCE, tolerance_change=LOSS_CHANGE,
    )  # fmt: skip

    def objective():
        with torch.no_grad():
            loss, gradient = _loss_and_gradient(torch, theta, sentences)
            theta.grad = gradient / n + theta / (C * n)
            return (loss / n + float((theta * theta).sum()) / (2 * C * n)).to(torch.float32)

    solver.step(objective)
    values = theta.detach().numpy().copy()
    params = {name: values[i * width : (i + 1) * width] for i, name in enumerate(PARTS[:-1])}
    return params | {"offset": values[6 * width :]}


def uas_of(params: dict, sentences: Sentences, tree: bool = False) -> float:
    """The share of ``sentences``' words with a known head whose predicted head is that head: the best-scoring of
    its candidates, or (``tree``) its head in its sentence's best tree (``arc_tree.tree_heads``)."""
    import torch

    right = total = 0
    theta = torch.from_numpy(np.concatenate([params[name] for name in PARTS]).astype(np.float32))
    with torch.no_grad():
        for batch in sentences.batches:
            known, S = batch["known"].numpy(), _scores(torch, theta, batch, sentences.width)
            best = S.argmax(dim=1).numpy()
            if tree:
                S_ = S.numpy()
                for row, n in enumerate(batch["lengths"].tolist()):
                    best[row, :n] = tree_heads(S_[row, :n, :n])
            gold = batch["gold"][:, 0, :].numpy()
            right, total = right + int((best[known] == gold[known]).sum()), total + int(known.sum())
    return right / total if total else float("nan")


def fit_path(
    fitting: Sentences, cs, held: Sentences | None = None, tree: bool = False
) -> list[tuple[float, dict, float]]:
    """``(C, params, UAS on held)`` along ``cs`` from the smallest, each fit warm-started from the one before
    (``tree``: the UAS of each held sentence's best tree)."""
    path, init = [], None
    for C in sorted(float(c) for c in cs):
        init = fit_selector(fitting, C, init)
        path.append((C, init, uas_of(init, held, tree) if held is not None else float("nan")))
    return path


def arc_weights(head, bounds) -> dict | None:
    """A linear head selector's arc-minus-no-arc score as weights on the parts of ``selector_features`` (float64;
    ``const``: what the standardisation and intercepts add to every pair), which ``pair_scores`` applies to a
    sentence without building its pairs' features; None for any other head (an earlier featx's pair probe)."""
    if bounds is None or head.kind != "linear":
        return None
    arc = list(head.classes).index("arc")
    coef, intercept = (np.asarray(head.weights[key], np.float64) for key in ("coef", "intercept"))
    diff = coef[:, arc] - coef[:, 1 - arc]
    mean, scale = np.asarray(head.mean, np.float64), np.asarray(head.scale, np.float64)
    w, width = diff / scale, vector_width(head.n_features, bounds)
    parts = dict(zip(("head", "dep", "product", "head_left", "head_right", "dep_left", "dep_right"),
                     w[: 7 * width].reshape(7, width), strict=True))  # fmt: skip
    return parts | {
        "offset": w[7 * width :], "bounds": tuple(bounds),
        "const": float(intercept[arc] - intercept[1 - arc] - (mean / scale) @ diff),
    }  # fmt: skip


def pair_scores(weights: dict, states: np.ndarray) -> np.ndarray:
    """``(candidate, word)`` arc scores of every pair of one sentence's word vectors ``states`` (the diagonal: the
    root), equal to the head's scores of their ``selector_features`` (the product factorised: ``(h q) . h``)."""
    H = np.asarray(states, np.float64)
    linear = H @ np.stack([weights[name] for name in PARTS_SCORED], axis=1)
    index = np.arange(len(H))
    offset = index[:, None] - index[None, :]  # head - word
    left, right = offset < 0, offset > 0
    S = (H * weights["product"]) @ H.T + linear[:, 0:1] + linear[None, :, 1] + weights["const"]
    S += np.where(left, linear[:, 2:3] + linear[None, :, 4], 0.0)
    S += np.where(right, linear[:, 3:4] + linear[None, :, 5], 0.0)
    return S + weights["offset"][offset_bucket(offset, weights["bounds"])]


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
    "PARTS",
    "Sentences",
    "arc_weights",
    "fit_path",
    "fit_selector",
    "n_buckets",
    "offset_bucket",
    "pair_scores",
    "selector_features",
    "standardiser",
    "to_head",
    "uas_of",
    "vector_width",
]
