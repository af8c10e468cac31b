"""Learning curves of word-level probes (``featx probe --label upos --train-sizes 0.1,0.5,1``): each outer
fold's training part is cut to a share of its **sentences** (or to whole sentences holding about N items),
seeded per fold; the test part is unchanged, so the points of one curve differ only in the data seen."""

from __future__ import annotations

import numpy as np

from ...selection import parse_layer_specs
from ..evaluation import summarise
from ..tasks.word_eval import item_features, run_fold
from ..tasks.word_items import WordPlan, opened_source
from .curve_baselines import curve_baseline

CURVE_BOOTSTRAP = 200


def sentence_subsample(
    groups: np.ndarray, rows: np.ndarray, size: float, seed: int, y: np.ndarray | None = None
) -> np.ndarray:
    """Whole sentences of ``rows``, seeded: a share of them (``size`` <= 1) or as many as hold about
    ``size`` items (> 1); at least two sentences, and (given the items' labels ``y``) as many more, in the same
    seeded order, as it takes to hold two classes in two sentences each (a probe's fit and its holdout need two
    classes: a smaller point would stop the whole run)."""
    sentences = np.unique(groups[rows])
    rng = np.random.default_rng(seed)
    rng.shuffle(sentences)
    if size <= 1:
        keep = max(2, int(round(size * len(sentences))))
    else:
        per_sentence = np.bincount(groups[rows])[sentences]
        keep = max(2, int(np.searchsorted(np.cumsum(per_sentence), size, side="left")) + 1)
    if y is not None:
        keep = max(keep, _two_classes(groups[rows], y[rows], sentences))
    if keep >= len(sentences):
        return rows
    return rows[np.isin(groups[rows], sentences[:keep])]


def _two_classes(groups: np.ndarray, y: np.ndarray, sentences: np.ndarray) -> int:
    """How many of ``sentences`` (in their order) it takes to hold two classes found in two sentences each, so
    that a split of the kept sentences into fit and holdout can keep both classes (all of them when no prefix
    does)."""
    rank = np.empty(int(groups.max()) + 1, dtype=np.int64)
    rank[sentences] = np.arange(len(sentences))
    item_rank = rank[groups]
    second = []  # per class: the rank of the second sentence holding it
    for label in np.unique(y):
        ranks = np.unique(item_rank[y == label])
        if len(ranks) >= 2:
            second.append(int(ranks[1]))
    return sorted(second)[1] + 1 if len(second) >= 2 else len(sentences)


def subsampled_plan(plan: WordPlan, size: float, seed: int, y: np.ndarray | None = None) -> WordPlan:
    folds = [
        (sentence_subsample(plan.groups, train, size, seed + 7 * index, y), test)
        for index, (train, test) in enumerate(plan.folds)
    ]
    return WordPlan(plan.evaluation, folds, list(plan.dev), groups=plan.groups)


def curve_layers(source, config, layers: list[int]) -> list[int]:
    if not config.curve_layers:
        return layers
    specs = parse_layer_specs(config.curve_layers, source.layers, config=config, name="curve_layers")
    return sorted({spec.layers[0] for spec in specs if spec.kind == "single"})


def curve_job(source, layer: int, pooling: str, shared, sizes: list[float]) -> list[dict]:
    """The learning-curve points of one (layer, pooling) for every classifier (real labels only)."""
    from threadpoolctl import threadpool_limits

    task = shared.task
    with threadpool_limits(limits=1), opened_source(source, shared.allow_partial) as opened:
        X = item_features(task, opened.word_features(pooling, layer, dtype=np.float32))
    records = []
    with threadpool_limits(limits=1):
        for size in sizes:
            plan = subsampled_plan(shared.plan, size, shared.seed, task.y)
            baseline = curve_baseline(plan, task.y, task.n_classes)  # the majority class on the same items
            for classifier in shared.classifiers:
                folds = [
                    run_fold(
                        classifier,
                        X,
                        [task.y],
                        train,
                        test,
                        dev,
                        plan.groups,
                        task.n_classes,
                        shared.cs,
                        shared.balanced,
                        shared.seed + 1000 * index,
                    )[0]
                    for index, ((train, test), dev) in enumerate(zip(plan.folds, plan.dev, strict=False))
                ]
                row = summarise(
                    plan, task.y, folds, task.n_classes, min(shared.n_bootstrap, CURVE_BOOTSTRAP), shared.seed
                )
                records.append(
                    {
                        "features": "main",
                        "site": "hidden",
                        "label": task.label,
                        "layer_spec": str(layer),
                        "layer": layer,
                        "pooling": pooling,
                        "classifier": classifier,
                        "train_size": size,
                        "n_train": row["n_train"],
                        "accuracy": row["accuracy"],
                        "accuracy_low": row["accuracy_low"],
                        "accuracy_high": row["accuracy_high"],
                        "macro_f1": row["macro_f1"],
                        "baseline": baseline,
                        "evaluation": plan.evaluation,
                    }
                )
    return records
