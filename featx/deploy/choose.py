"""The choice of layer spec and pooling by cross-validation on the training rows only.

Each candidate is scored by k-fold cross-validation over the training rows (stratified by class for a class
label; a row is one text or one pair, so a fold never splits a pair): in every fold a head is trained by
``head.fit_head`` on that fold's training part (its C or alpha chosen on a holdout of that part) and scored
on the held-out part. With ``--group COLUMN`` the folds, and every head's holdout inside them, take whole
groups (``featx.probing``'s group k-fold and holdouts). The test split's rows are never read here. Ties keep
the earlier candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..options import Placeholder, joined, spoken_value
from ..probing import (
    Groups,
    check_group_count,
    check_training_groups,
    confusion,
    fold_mean,
    grouped_folds,
    metrics_from_confusion,
    regression_scores,
    stratified_group_splits,
)
from ..selection import LayerSpec
from . import head as heads
from .stack import fit_stack


@dataclass(frozen=True)
class Candidate:
    """One candidate's cross-validated score (mean over folds) and its per-fold scores."""

    spec: LayerSpec
    pooling: str
    score: float
    fold_scores: tuple[float, ...]
    C: float = float("nan")  # a head selector's: the C its cross-validation chose
    start: dict | None = field(default=None, compare=False, repr=False)  # a head selector's: its folds' mean at C


def score_of(metric: str, y_true: np.ndarray, predicted: np.ndarray, n_classes: int | None) -> float:
    """``metric`` of predicted codes (classification) or values (regression)."""
    if n_classes is None:
        return float(regression_scores(y_true, predicted)[metric])
    cm = confusion(np.asarray(y_true, np.int64), np.asarray(predicted, np.int64), n_classes)
    return float(metrics_from_confusion(cm)[metric])


def cv_folds(
    y: np.ndarray, n_classes: int | None, folds: int, seed: int, groups: np.ndarray | Groups | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """k folds over the training rows (positions 0..n-1): stratified for classes, fewer when a class is small;
    with ``groups`` (the sentence of each word) every group in one fold, stratified as far as groups allow;
    with ``--group``'s ``Groups``, featx probe's group k-fold (regression: groups dealt to folds by size)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    if isinstance(groups, np.ndarray):
        return _group_folds(y, groups, folds, seed)
    k = folds if n_classes is None else _class_folds(y, n_classes, folds)
    if groups is not None:
        check_group_count(groups, k)
        pairs = grouped_folds(y, groups, k, seed, stratified=n_classes is not None)
        check_training_groups(groups, pairs, [None] * len(pairs))
        return pairs
    if n_classes is None:
        return list(KFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(len(y))))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(y)), y))


def _one_candidate() -> str:
    """``--layer K --pooling P`` on the command line, ``layer=K, pooling=P`` from Python: one candidate."""
    return joined(
        spoken_value(None, "layer", Placeholder("K"), "--layer"),
        spoken_value(None, "pooling", Placeholder("P"), "--pooling"),
    )


def _class_folds(y: np.ndarray, n_classes: int, folds: int) -> int:
    """The folds a class label allows: at most the rows of its smallest class (a single row is refused)."""
    counts = np.bincount(y, minlength=n_classes)
    smallest = int(counts[counts > 0].min())
    if smallest < 2:
        raise InputError(
            "a class has a single training row: the layer and pooling cannot be cross-validated",
            f"add rows of that class, or give {_one_candidate()} to fit without choosing",
        )
    return min(folds, smallest)


def _group_folds(y: np.ndarray, groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified group k-fold: a class rarer than k items cannot be in every fold, and need not be."""
    n_groups = len(np.unique(groups))
    if n_groups < 2:
        raise InputError(
            "the training words come from a single sentence: the layer and pooling cannot be cross-validated",
            f"give more training sentences, or {_one_candidate()} to fit without choosing",
        )
    return stratified_group_splits(y, groups, min(folds, n_groups), seed)


def take(X, rows: np.ndarray):
    """These rows of one matrix, or of each layer's matrix of a stack."""
    return [block[rows] for block in X] if isinstance(X, list) else X[rows]


def cross_validate(
    X, y: np.ndarray, classes: list[str] | None, folds, metric: str, fit_head, groups: np.ndarray | None = None
) -> list[float]:
    """The score of each fold: a head trained on the fold's training part (``groups``: its rows' groups, which
    its holdouts keep whole), scored on the rest. ``fit_head(X_part, y_part, groups_part, fit_rows)``."""
    scores = []
    for fit_rows, val_rows in folds:
        head = fit_head(take(X, fit_rows), y[fit_rows], None if groups is None else groups[fit_rows], fit_rows)
        predicted = head.predict_codes(take(X, val_rows))
        scores.append(score_of(metric, y[val_rows], predicted, None if classes is None else len(classes)))
    return scores


def fit_any(
    classifier: str, X, y: np.ndarray, classes: list[str] | None, options: dict, dev=None, groups=None, strata=None
):
    """``head.fit_head`` on one matrix (``dev``: its fixed validation rows), ``stack.fit_stack`` on a stack's
    list of per-layer matrices; ``groups``: each row's group (``--group``), held out whole; ``strata``: the labels
    a logreg head's C holdout is drawn on (the control task's head: the real labels)."""
    if isinstance(X, list):
        assert classes is not None, "a stack is a classification head"
        return fit_stack(classifier, X, y, classes, options["cs"], options["balanced"], options["seed"], groups)
    cs, alphas, balanced, seed = options["cs"], options["alphas"], options["balanced"], options["seed"]
    level = options.get("level", "sentence")
    return heads.fit_head(classifier, X, y, classes, cs, alphas, balanced, seed, dev, groups, level, strata)


def score_candidate(
    path, spec: LayerSpec, pooling: str, rows: np.ndarray, y, classes, splits, metric, options, groups=None
):
    """One candidate's per-fold scores: its training rows read from the features file at ``path`` (and only
    theirs), one BLAS (and torch) thread, as ``featx probe``'s jobs run: these are small matrix products
    where extra threads mostly spin, badly so on a shared machine; the parallelism is across candidates."""
    from threadpoolctl import threadpool_limits

    from ..probing import JOB_THREADS, torch_threads
    from ..store import FeatureFile
    from .features import matrix_reader

    def fit_head(X_part, y_part, groups_part, _rows):
        return fit_any(options["classifier"], X_part, y_part, classes, options, groups=groups_part)

    read = matrix_reader(options.get("level", "sentence"))
    with threadpool_limits(limits=JOB_THREADS), torch_threads(JOB_THREADS, options["classifier"] == "mlp"):
        with FeatureFile(path) as features:
            X = read(features, spec, pooling, rows)
        return cross_validate(X, y, classes, splits, metric, fit_head, groups)


def fit_options(plan) -> dict:
    """The options of every head a ``FitPlan`` fits (``fit_any``'s, ``folds``, ``seed`` and ``jobs``)."""
    config = plan.config
    classifier = "ridge" if plan.classes is None else config.classifier
    return {
        "classifier": classifier,
        "folds": int(config.folds),
        "seed": int(config.seed),
        "cs": tuple(config.cs),
        "alphas": tuple(config.alphas),
        "balanced": bool(config.balanced),
        "jobs": config.jobs,
        "level": plan.level,
    }


def choose(
    path,
    candidates: list[tuple[LayerSpec, str]],
    rows: np.ndarray,
    y: np.ndarray,
    classes: list[str] | None,
    metric: str,
    options: dict,
    report: Callable[[str], None] | None = None,
    groups: np.ndarray | Groups | None = None,
    splits: list[tuple[np.ndarray, np.ndarray]] | None = None,
    same: list[int] | None = None,
) -> list[Candidate]:
    """Every candidate's cross-validated score on the training rows, best first. ``rows`` are the stored
    rows (or words, ``options["level"]`` "word") of the training part (the only ones read), ``y`` their
    targets, ``groups`` their sentences (words: folds keep a sentence whole) or ``--group``'s ``Groups`` (folds
    and every head's holdouts keep a group whole); ``options`` are ``fit_head``'s
    keywords, ``folds``, ``seed`` and ``jobs`` (candidates scored side by side, one process each); ``splits``: the
    folds (``cv_folds``' over these rows and groups, drawn here when not given); ``same``: for each candidate, the
    first that reads the same vectors (``features.checked_candidates``), scored once for both; None: each its own."""
    from ..probing import job_workers, run_jobs

    n_classes = None if classes is None else len(classes)
    if splits is None:
        splits = cv_folds(y, n_classes, options["folds"], options["seed"], groups)
    inner = groups.codes if isinstance(groups, Groups) else groups  # the heads' holdouts: whole groups (sentences)
    same = list(range(len(candidates))) if same is None else same
    unique = [index for index, first in enumerate(same) if index == first]  # the others reuse their first's scores
    jobs = [(path, *candidates[index], rows, y, classes, splits, metric, options, inner) for index in unique]
    workers = job_workers(options.get("jobs"), len(jobs))
    # one worker: each candidate scored (and reported) in turn; several: side by side, reported at the end
    every = iter(run_jobs(score_candidate, jobs, workers) if workers > 1 else (score_candidate(*job) for job in jobs))
    scored: list[Candidate] = []
    for number, (spec, pooling) in enumerate(candidates, 1):
        first = same[number - 1]
        fold_scores = next(every) if first == number - 1 else scored[first].fold_scores
        finite = np.asarray(fold_scores, dtype=float)[np.isfinite(fold_scores)]
        mean = fold_mean(finite) if len(finite) else float("-inf")  # rounded: equal but for float rounding ties
        scored.append(Candidate(spec, pooling, mean, tuple(fold_scores)))
        if report is not None:
            line = f"[{number}/{len(candidates)}] layer {spec.name} {pooling}: {metric} {mean:.4f}"
            if first != number - 1:
                line += f" (the same vectors as layer {scored[first].spec.name} {scored[first].pooling}: scored once)"
            report(line)
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].score, i))
    return [scored[i] for i in order]


__all__ = [
    "Candidate",
    "choose",
    "cross_validate",
    "cv_folds",
    "fit_any",
    "fit_options",
    "score_candidate",
    "score_of",
    "take",
]
