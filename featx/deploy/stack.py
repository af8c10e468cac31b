"""``StackHead``: the per-layer weighted stack of ``featx probe --layer stack`` as a deployed head: one linear
probe per layer, and a logistic meta-classifier on their class scores (probabilities for logreg, margins for
svm), fitted as ``probing.evaluation.run_stack`` fits it: each layer's probe on every training row, the
meta-classifier on out-of-fold scores of those rows only. Classification only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..probing import STACK_META_C, stack_folds, stack_layer, stack_meta
from .head import Head, linear_weights

META_C = STACK_META_C  # the meta-classifier's C, as in the probes' stack


@dataclass
class StackHead:
    """Per-layer heads and the meta head over their concatenated class scores."""

    parts: list[Head]
    meta: Head  # linear, identity scaler, over len(parts) * k scores

    @property
    def classifier(self) -> str:
        return self.parts[0].classifier

    @property
    def classes(self) -> list[str] | None:
        return self.meta.classes

    @property
    def kind(self) -> str:
        return "stack"

    @property
    def C(self) -> float:
        return float(np.exp(np.mean(np.log([part.C for part in self.parts]))))

    @property
    def n_features(self) -> int:
        return int(sum(part.n_features for part in self.parts))

    @property
    def widths(self) -> list[int]:
        return [part.n_features for part in self.parts]

    @property
    def has_proba(self) -> bool:
        return True

    def _inputs(self, blocks: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([layer_scores(part, X) for part, X in zip(self.parts, blocks, strict=True)], axis=1)

    def scores(self, blocks: list[np.ndarray]) -> np.ndarray:
        return self.meta.scores(self._inputs(blocks))

    def proba(self, blocks: list[np.ndarray]) -> np.ndarray:
        return self.meta.proba(self._inputs(blocks))

    def predict_codes(self, blocks: list[np.ndarray]) -> np.ndarray:
        return np.argmax(self.scores(blocks), axis=1)


def layer_scores(part: Head, X: np.ndarray) -> np.ndarray:
    """What the meta-classifier reads of one layer: probabilities (logreg) or margins (svm), -inf as 0. A stack's
    binary svm part scores its margin m as -m, m (``linear_weights(..., halved=False)``), as ``featx probe``'s
    stack feeds it; one of a bundle written before 30 Nov 2026 as -m/2, m/2, which its meta-classifier read."""
    scores = part.proba(X) if part.has_proba else part.scores(X)
    return np.nan_to_num(scores, neginf=0.0)


def fit_stack(
    classifier: str, blocks: list[np.ndarray], y, classes: list[str], cs, balanced: bool, seed: int, groups=None
):
    """``featx probe --layer stack``'s stack on these rows, by its own code (``probing.stack_layer``: each layer's
    probe on every row and its out-of-fold scores, by the probes' inner folds, of whole groups with ``groups``;
    ``probing.stack_meta``: the meta-classifier on them), so that the meta-classifier reads what probe's reads."""
    k = len(classes)
    rows, y = np.arange(len(y)), np.asarray(y, np.int64)
    folds = stack_folds(y, rows, k, groups)
    parts, oof_blocks = [], []
    for X in blocks:
        model, scaler, C, oof = stack_layer(classifier, X, y, rows, None, k, tuple(cs), balanced, seed, folds, groups)
        weights = linear_weights(model, k, halved=classifier != "svm")  # a binary svm: -m, m, probe's scores
        parts.append(Head(classifier, scaler.mean, scaler.scale, weights, list(classes), float(C)))
        oof_blocks.append(oof)
    meta_model = stack_meta(np.concatenate(oof_blocks, axis=1), y, balanced)
    width = k * len(blocks)
    identity = (np.zeros(width, np.float32), np.ones(width, np.float32))
    meta = Head("logreg", *identity, linear_weights(meta_model, k), list(classes), META_C)
    return StackHead(parts, meta)


__all__ = ["META_C", "StackHead", "fit_stack", "layer_scores"]
