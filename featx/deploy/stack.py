"""``StackHead``: the per-layer weighted stack of ``featx probe --layer stack`` as a deployed head: one linear
probe per layer, and a logistic meta-classifier on their class scores (probabilities for logreg, margins for
svm), fitted as ``probing.evaluation.run_stack`` fits it: each layer's probe on every training row, the
meta-classifier on out-of-fold scores of those rows only. Classification only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..probing import fit_at_c, stack_folds, stack_splits
from . import head as heads
from .head import Head, linear_weights

META_C = 1.0  # the meta-classifier's C, as in the probes' stack


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
    """What the meta-classifier reads of one layer: probabilities (logreg) or margins (svm), -inf as 0."""
    scores = part.proba(X) if part.has_proba else part.scores(X)
    return np.nan_to_num(scores, neginf=0.0)


def fit_stack(
    classifier: str, blocks: list[np.ndarray], y, classes: list[str], cs, balanced: bool, seed: int, groups=None
):
    """One ``fit_head`` per layer on these rows; the meta-classifier on their out-of-fold scores (the probes'
    inner folds of the stack: by whole group with ``groups``, each row's group)."""
    from sklearn.linear_model import LogisticRegression

    k = len(classes)
    rows = np.arange(len(y))
    folds = stack_folds(y, rows, k, groups)
    splits = stack_splits(y, rows, folds, seed, groups) if folds >= 2 else []
    parts, oof_blocks = [], []
    for X in blocks:
        parts.append(heads.fit_head(classifier, X, y, classes, cs, (), balanced, seed, groups=groups))
        oof = np.zeros((len(y), k))
        if folds >= 2:
            for fit_rows, val_rows in splits:  # the probes' own inner fit at the layer's C (fit_at_c)
                model, scaler = fit_at_c(classifier, X, y, fit_rows, parts[-1].C, balanced, seed)
                inner = Head(classifier, scaler.mean, scaler.scale, linear_weights(model, k), list(classes))
                oof[val_rows] = layer_scores(inner, X[val_rows])
        else:
            oof = layer_scores(parts[-1], X)
        oof_blocks.append(oof)
    meta_model = LogisticRegression(C=META_C, max_iter=1000, class_weight="balanced" if balanced else None)
    inputs = np.concatenate(oof_blocks, axis=1)
    meta_model.fit(inputs, y)
    width = inputs.shape[1]
    identity = (np.zeros(width, np.float32), np.ones(width, np.float32))
    meta = Head("logreg", *identity, linear_weights(meta_model, k), list(classes), META_C)
    return StackHead(parts, meta)


__all__ = ["META_C", "StackHead", "fit_stack", "layer_scores"]
