"""Sentence pairs in the probes: the SentEval feature of separate-mode files and the cosine baseline.

A ``--pair-mode separate`` file holds side a (u) and side b (v) of every pooling and layer. Its probes
read ``[u, v, |u - v|, u * v]`` per layer and pooling (Conneau et al., 2017), standardised inside each
training part like any feature. Every pair table starts with the zero-parameter baseline: the cosine
of u and v per layer and pooling, scored on the same test rows (Spearman and Pearson against a
regression label; accuracy of thresholds on the cosine, chosen on the training part only, against a
class label). A pair is one row, so no fold ever splits a pair between training and test.
Cross-mode files probe like any file (``mean_a`` and ``mean_b`` are two more poolings).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InputError
from ...store import HIDDEN_SITE, PAIR_B_SITE, FeatureFile, FeatureRead, contrast_site
from .. import evaluation as ev
from ..contrast import contrast_answers, contrast_difference
from ..evaluation import regression_metrics as rm

if TYPE_CHECKING:
    from ...selection import LayerSpec
    from ..config import ProbeConfig


def senteval(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[u, v, |u - v|, u * v]``, row by row: ``(n, 4 * width)``."""
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)


def pooled_block(features: FeatureFile, pooling: str, layer: int, site: str = HIDDEN_SITE) -> np.ndarray:
    """What a probe reads for one pooling and layer: the SentEval feature of a separate-mode file's pair
    (site ``hidden``), else the stored features."""
    if features.pair_mode == "separate" and site == HIDDEN_SITE:
        return senteval(*features.pair_features(pooling, layer))
    if site == HIDDEN_SITE and contrast_answers(features):  # --contrast: the difference of the two answers' states
        return contrast_difference(features, pooling, layer)
    return features.features(pooling, layer, site=site)


def block_reads(features: FeatureFile, pooling: str, layer: int, site: str = HIDDEN_SITE) -> list[FeatureRead]:
    """The stored matrices ``pooled_block`` reads for one pooling and layer (checked before the first fit)."""
    if features.pair_mode == "separate" and site == HIDDEN_SITE:
        return [FeatureRead("pooled", layer, pooling), FeatureRead("pooled", layer, pooling, PAIR_B_SITE)]
    if site == HIDDEN_SITE and contrast_answers(features):
        return [FeatureRead("pooled", layer, pooling), FeatureRead("pooled", layer, pooling, contrast_site(1))]
    return [FeatureRead("pooled", layer, pooling, site)]


def refuse_separate_pairs(features: FeatureFile, command: str) -> None:
    """Analyses of one text's vectors (``erase``, ``neurons``) would see side a only of a separate-mode file."""
    if features.pair_mode == "separate":
        raise InputError(
            f"featx {command} reads one text's features, and {features.path} holds sentence pairs "
            "encoded separately (side a and side b)",
            "extract the pairs with --pair-mode cross (one vector per pair), or one column alone",
        )


def cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity in float64 (0 where a side is all zeros)."""
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
    norms = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    return np.where(norms > 0, (u * v).sum(axis=1) / np.where(norms > 0, norms, 1.0), 0.0)


ALL_ORDERS_UP_TO = 4  # classes whose every order is tried (4! = 24 passes); more: ordered by their mean score


def fit_thresholds(values: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds on one score that classify best on these (training) rows.

    ``n_classes - 1`` ascending cuts split the score's range into bands, one class each; the cuts maximise
    the accuracy exactly (dynamic programming over the sorted scores; a cut never separates equal scores),
    over every order of the classes along the score (up to 4 classes; beyond, the order of their mean
    scores). Returns ``(order, thresholds)``: a score falls in band ``searchsorted(thresholds, s, "right")``
    and is given class ``order[band]``. Two classes: the best single threshold and side."""
    import itertools

    means = np.array([values[y == k].mean() if (y == k).any() else np.inf for k in range(n_classes)])
    by_mean = tuple(int(k) for k in np.argsort(means, kind="stable"))
    orders = [by_mean] + (
        [order for order in itertools.permutations(range(n_classes)) if order != by_mean]
        if n_classes <= ALL_ORDERS_UP_TO
        else []
    )
    sorter = np.argsort(values, kind="stable")
    ordered = values[sorter]
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for order in orders:
        rank_of = np.empty(n_classes, dtype=np.int64)
        rank_of[list(order)] = np.arange(n_classes)
        correct, thresholds = _best_cuts(ordered, rank_of[y[sorter]], n_classes)
        if best is None or correct > best[0]:  # ties keep the earlier order (the mean order first)
            best = (correct, np.asarray(order), thresholds)
    assert best is not None  # orders holds the mean order at least
    return best[1], best[2]


def _best_cuts(ordered: np.ndarray, ranks: np.ndarray, n_classes: int) -> tuple[float, np.ndarray]:
    """Most rows whose band (by ascending cuts of the sorted scores ``ordered``) is their rank, and the cuts."""
    n = len(ordered)
    prefix = np.zeros((n_classes, n + 1))
    for rank in range(n_classes):
        prefix[rank, 1:] = np.cumsum(ranks == rank)
    cuttable = np.ones(n + 1, dtype=bool)
    cuttable[1:n] = ordered[1:] > ordered[:-1]
    best = np.where(cuttable, prefix[0], -np.inf)  # rows below the first cut j are the first class
    back = []
    positions = np.arange(n + 1)
    for rank in range(1, n_classes - 1):
        gain = best - prefix[rank]
        running = np.maximum.accumulate(gain)
        back.append(np.maximum.accumulate(np.where(gain == running, positions, 0)))
        best = np.where(cuttable, prefix[rank] + running, -np.inf)
    total = best + prefix[-1, n] - prefix[-1]
    cut = int(np.argmax(total))
    correct, cuts = float(total[cut]), [cut]
    for previous in reversed(back):
        cut = int(previous[cut])
        cuts.append(cut)
    thresholds = [-np.inf if c == 0 else np.inf if c == n else (ordered[c - 1] + ordered[c]) / 2 for c in cuts[::-1]]
    return correct, np.asarray(thresholds)


def predict_thresholds(values: np.ndarray, order: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    return order[np.searchsorted(thresholds, values, side="right")]


def _regression_scores(score: np.ndarray, y: np.ndarray, plan, n_boot: int, seed: int) -> dict:
    out = {}
    if plan.is_split:
        test = plan.folds[0][1]
        values = rm.metrics(y[test], score[test])
        groups = getattr(plan, "groups", None)
        bounds = rm.bootstrap(y[test], score[test], n_boot, seed, None if groups is None else groups[test])
        for name in ("spearman", "pearson"):
            out[name], (out[f"{name}_low"], out[f"{name}_high"]) = float(values[name]), bounds[name]
        return out
    per_fold = [rm.metrics(y[test], score[test]) for _, test in plan.folds]
    for name in ("spearman", "pearson"):
        mean, low, high = rm.t_interval([float(m[name]) for m in per_fold])
        out[name], out[f"{name}_low"], out[f"{name}_high"] = mean, low, high
    return out


def cosine_class_scores(score: np.ndarray, y: np.ndarray, plan, n_classes: int, n_boot: int, seed: int) -> dict:
    predictions = []
    for train, test in plan.folds:
        order, thresholds = fit_thresholds(score[train], y[train], n_classes)  # training part only
        predictions.append(predict_thresholds(score[test], order, thresholds))
    if plan.is_split:
        test = plan.folds[0][1]
        groups = getattr(plan, "groups", None)
        tested = None if groups is None else groups[test]
        low, high = ev.bootstrap_intervals(y[test], predictions[0], n_classes, n_boot, seed, tested)["accuracy"]
        return {"accuracy": float((predictions[0] == y[test]).mean()), "accuracy_low": low, "accuracy_high": high}
    mean, low, high = ev.t_interval(
        np.asarray([float((p == y[test]).mean()) for p, (_, test) in zip(predictions, plan.folds, strict=False)])
    )
    return {"accuracy": mean, "accuracy_low": low, "accuracy_high": high}


def cosine_baseline(
    path,
    kept: np.ndarray,
    y: np.ndarray,
    plan,
    layers: list[int],
    poolings: list[str],
    n_classes: int | None,
    n_boot: int,
    seed: int,
    allow_partial: bool = False,
) -> list[dict] | None:
    """The cosine baseline per pooling and layer of a separate-mode file (None for any other file).

    ``y`` are the targets of the ``kept`` rows (``n_classes`` None: regression); ``plan`` their folds."""
    with FeatureFile(path, allow_partial=allow_partial) as features:
        if features.pair_mode != "separate":
            return None
        rows = []
        for pooling in poolings:
            for layer in layers:
                score = cosine(*features.pair_features(pooling, layer))[kept]
                scores = (
                    _regression_scores(score, y, plan, n_boot, seed)
                    if n_classes is None
                    else cosine_class_scores(score, y, plan, n_classes, n_boot, seed)
                )
                scores = {name: float(value) if np.isfinite(value) else None for name, value in scores.items()}
                rows.append({"pooling": pooling, "layer": int(layer), **scores})  # None: undefined (a constant cosine)
    return rows


def baseline_meta(
    config: ProbeConfig,
    path: str | Path,
    kept: np.ndarray,
    y: np.ndarray,
    plan: ev.Plan,
    specs: list[LayerSpec],
    poolings: list[str],
    n_classes: int | None = None,
) -> dict[str, Any]:
    """``{"pair_mode": ..., "cosine_baseline": rows}`` for a probe's metadata ({} for single texts)."""
    layers = sorted({spec.layers[0] for spec in specs if spec.kind == "single"})
    with FeatureFile(path, allow_partial=config.allow_partial) as features:
        mode = features.pair_mode
    if mode is None:
        return {}
    meta: dict[str, Any] = {
        "pair_mode": mode,
        "pair_feature": "[u, v, |u-v|, u*v]" if mode == "separate" else "cross-encoded pair",
    }
    if mode == "separate":
        meta["cosine_baseline"] = cosine_baseline(
            path,
            kept,
            y,
            plan,
            layers,
            poolings,
            n_classes,
            int(config.n_bootstrap),
            int(config.seed),
            config.allow_partial,
        )
    return meta
