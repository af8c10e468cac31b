"""Fitting one structural probe (Hewitt & Manning 2019) on the training sentences of one fold.

The probe is a linear map ``B`` (``d x r``): the *distance* probe reads ``||B^T (h_i - h_j)||^2`` as the tree
distance between words ``i`` and ``j`` of a sentence, the *depth* probe ``||B^T h_i||^2`` as word ``i``'s depth.
The loss is the paper's: the L1 error over a sentence's word pairs divided by its length squared (distance),
or over its words divided by its length (depth), averaged over the sentences of a batch.

Every word vector is divided by the per-dimension standard deviation of the training sentences' words (not
centred, so both probes keep the paper's form: a diagonal scaling is absorbed by ``B``); it only helps the
optimiser. ``B`` starts uniform in [-0.05, 0.05] (the paper's code) and is trained (step ``LEARNING_RATE``) by
``solvers.classifiers.Adam`` on batches of ``BATCH_SENTENCES`` whole sentences, early-stopped on the loss of
held-out training sentences (never a test sentence): the step is halved after an epoch without improvement,
training stops after ``PATIENCE`` such epochs (or ``MAX_EPOCHS``), and the best epoch's ``B`` is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..solvers.classifiers import Adam

# The paper's step is 1e-3 for 40,000 training sentences; on a few hundred (UD GUM, 320 per fold, MiniLM layer 3)
# it still underfits after 60 epochs (UUAS 0.40 against 0.53 at 1e-2, which stops after about 35).
LEARNING_RATE = 1e-2
BATCH_SENTENCES = 20  # the paper's batch size
MAX_EPOCHS = 100
PATIENCE = 4  # epochs without a better holdout loss before stopping


@dataclass(frozen=True)
class Sentences:
    """The sentences probed: sentence ``k`` owns the word vectors ``starts[k]:starts[k] + lengths[k]`` of a
    layer's ``(n_words, d)`` matrix, and its gold ``targets[k]`` (an ``(n, n)`` distance or an ``(n,)`` depth
    array)."""

    starts: np.ndarray
    lengths: np.ndarray
    targets: list[np.ndarray]

    def vectors(self, X: np.ndarray, k: int) -> np.ndarray:
        start = int(self.starts[k])
        return X[start : start + int(self.lengths[k])]


@dataclass(frozen=True)
class FittedProbe:
    """A trained structural probe: ``B`` over word vectors divided by ``scale``, and its training epochs."""

    B: np.ndarray
    scale: np.ndarray
    epochs: int

    def predict(self, mode: str, vectors: np.ndarray) -> np.ndarray:
        """A sentence's predicted ``(n, n)`` squared distances (``distance``) or ``(n,)`` depths (``depth``)."""
        projected = (np.asarray(vectors, np.float64) / self.scale) @ self.B
        norms = (projected * projected).sum(axis=1)
        if mode == "depth":
            return norms
        return np.maximum(norms[:, None] + norms[None, :] - 2.0 * projected @ projected.T, 0.0)


def _batch(torch, mode: str, X: np.ndarray, sentences: Sentences, positions: np.ndarray, scale):
    """Padded ``(b, L, d)`` vectors, targets and word mask of the sentences at ``positions``."""
    lengths = sentences.lengths[positions]
    width = int(lengths.max())
    H = np.zeros((len(positions), width, X.shape[1]), np.float32)
    shape = (len(positions), width, width) if mode == "distance" else (len(positions), width)
    T = np.zeros(shape, np.float32)
    for row, k in enumerate(positions.tolist()):
        n = int(sentences.lengths[k])
        H[row, :n] = sentences.vectors(X, k)
        if mode == "distance":
            T[row, :n, :n] = sentences.targets[k]
        else:
            T[row, :n] = sentences.targets[k]
    mask = np.arange(width)[None, :] < lengths[:, None]
    return torch.from_numpy(H / scale), torch.from_numpy(T), torch.from_numpy(mask), torch.from_numpy(lengths)


def _loss(torch, mode: str, B, batch) -> Any:
    """The mean over the batch's sentences of the L1 error divided by the sentence's length (squared: distance)."""
    H, T, mask, lengths = batch
    P = H @ B
    norms = (P * P).sum(-1)
    n = lengths.to(P.dtype)
    if mode == "depth":
        return ((norms - T).abs() * mask).sum(-1).div(n).mean()
    D = (norms[:, :, None] + norms[:, None, :] - 2.0 * P @ P.transpose(1, 2)).clamp_min(0.0)
    pairs = mask[:, :, None] & mask[:, None, :]
    return ((D - T).abs() * pairs).sum((-1, -2)).div(n * n).mean()


def fit_probe(
    mode: str, X: np.ndarray, sentences: Sentences, fit: np.ndarray, hold: np.ndarray, rank: int, seed: int
) -> FittedProbe:
    """``B`` of rank ``rank`` trained on the sentences ``fit`` and early-stopped on the sentences ``hold`` (both
    positions into ``sentences``, both training sentences)."""
    import torch

    starts, lengths = sentences.starts[fit], sentences.lengths[fit]
    rows = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])
    scale = X[rows].astype(np.float64).std(axis=0)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    generator = torch.Generator().manual_seed(seed)
    B = (torch.rand((X.shape[1], rank), generator=generator) * 0.1 - 0.05).requires_grad_()
    optimiser = Adam([B], lr=LEARNING_RATE, weight_decay=0.0)
    held = [_batch(torch, mode, X, sentences, part, scale) for part in np.array_split(hold, _parts(hold))]
    rng = np.random.default_rng(seed)
    best, best_B, epochs, waited = float("inf"), B.detach().clone(), 0, 0
    for epoch in range(1, MAX_EPOCHS + 1):
        order = rng.permutation(fit)
        for part in np.array_split(order, _parts(order)):
            optimiser.zero_grad()
            _loss(torch, mode, B, _batch(torch, mode, X, sentences, part, scale)).backward()
            optimiser.step()
        with torch.no_grad():
            loss = sum(float(_loss(torch, mode, B, batch)) * len(batch[3]) for batch in held) / len(hold)
        if loss < best - 1e-6:
            best, best_B, epochs, waited = loss, B.detach().clone(), epoch, 0
            continue
        waited += 1
        optimiser.lr /= 2
        if waited >= PATIENCE:
            break
    return FittedProbe(best_B.numpy().astype(np.float64), scale.astype(np.float64), epochs)


def _parts(positions: np.ndarray) -> int:
    return max(1, -(-len(positions) // BATCH_SENTENCES))
