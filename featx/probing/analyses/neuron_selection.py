"""Validation of ``featx neurons``' rankings by selection: probes retrained on only k neurons.

Per training part each ranking is refitted, and a logreg probe (its own C search on the training part) is
retrained on only the top, the bottom or a random k neurons, then scored on the test part. The random
baseline is the mean of ``draws`` random sets per training part (``--draws``, default ``RANDOM_DRAWS``; one
seeded generator per part, from the run's seed), so one lucky or unlucky draw does not decide it; its interval is
over the test rows (a
split: each row's copies resampled together) or over the folds, as the other columns'. Each top k is tested
against the random k on the same test rows by a paired test (a split: the exact sign-flip randomisation test of
each row's correctness against its mean correctness over the draws, every sign pattern counted, so its p has no
Monte Carlo floor; folds: the corrected resampled t-test of ``featx probe``), Holm-corrected over one layer's top-k
tests. ``n_boot`` (``--n-bootstrap``) is the intervals' resamples; the tests draw nothing. No test row ranks or
chooses.

The probes of one training part on k neurons (the draws, the top and bottom k of each ranking) are solved together
(``evaluation.run_logreg_sets``), sharing the part's inner holdout: the same C and scores as one fit at a time.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import evaluation as ev
from ..config import DEFAULT_CS
from ..evaluation import significance
from .target import Task

RANKINGS = ("probe", "anova")
RANDOM_DRAWS = 10  # the default of --draws: random k-neuron sets per training part, whose mean is the baseline
SELECTION_COLUMNS = [
    "label",
    "pooling",
    "layer",
    "fraction",
    "k",
    "selection",
    "ranking",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "majority",
    "macro_f1",
    "n_train",
    "n_test",
    "draws",
    "p_vs_random",
    "p_vs_random_holm",
    "significant_vs_random",
    "evaluation",
]


def order(scores: np.ndarray) -> np.ndarray:
    """Neuron indices from most to least important (ties: lower index first)."""
    return np.lexsort((np.arange(len(scores)), -scores))


def selections(scores: dict, width: int, fractions, rng, draws: int = RANDOM_DRAWS) -> list[tuple]:
    """(selection, ranking, fraction, neuron sets): ``draws`` random sets of k, then the top and bottom k of each
    ranking (one set each) per fraction; ``rng`` is the training part's seeded generator."""
    out = []
    orders = {name: order(scores[name]) for name in RANKINGS}
    for fraction in fractions:
        k = max(1, int(round(fraction * width)))
        randoms = [np.sort(rng.choice(width, k, replace=False)) for _ in range(draws)]
        out.append(("random", "-", fraction, randoms))
        for name in RANKINGS:
            out.append(("top", name, fraction, [np.sort(orders[name][:k])]))
            out.append(("bottom", name, fraction, [np.sort(orders[name][-k:])]))
    return out


def summarise_draws(task: Task, per_fold: list[list[ev.FoldResult]], n_boot: int, seed: int) -> dict:
    """The metric columns of a choice whose folds hold one or several draws each: several draws are scored as
    the mean over them (the draws' predictions stacked on copies of the fold's test rows; a split's interval
    resamples each test row with its copies, as one group)."""
    plan, draws = task.plan, len(per_fold[0])
    if draws == 1:
        return ev.summarise(plan, task.y, [results[0] for results in per_fold], task.n_classes, n_boot, seed)
    groups = plan.groups if plan.groups is not None or not plan.is_split else np.arange(len(task.y))
    stacked = replace(plan, folds=[(train, np.tile(test, draws)) for train, test in plan.folds], groups=groups)
    folds = [
        ev.FoldResult(
            np.concatenate([result.predictions for result in results]),
            C=float(np.median([result.C for result in results])),
            fit_seconds=float(sum(result.fit_seconds for result in results)),
        )
        for results in per_fold
    ]
    row = ev.summarise(stacked, task.y, folds, task.n_classes, n_boot, seed)
    row["n_test"] = int(sum(len(test) for _, test in plan.folds))
    return row


def row_scores(task: Task, per_fold: list[list[ev.FoldResult]]) -> np.ndarray:
    """Each labelled row's correctness on its test part, averaged over the draws (NaN: never a test row)."""
    scores = np.full(len(task.y), np.nan)
    for (_, test), results in zip(task.plan.folds, per_fold, strict=False):
        scores[test] = np.mean([result.predictions == task.y[test] for result in results], axis=0)
    return scores


def _as_score(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return pred  # the per-row scores are passed as the predictions


def how_tested(plan: ev.Plan) -> str:
    """How ``p_vs_random`` tests, in the words of the printout and the results' meta (``test_vs_random``)."""
    if plan.is_split:
        return "exact paired sign-flip test, every sign pattern counted"
    return "corrected resampled t-test over the folds"


def p_vs_random(task: Task, top: list[ev.FoldResult], random: list[list[ev.FoldResult]]) -> float:
    """The paired test of a top k (one set per fold) against the mean of the random draws of its k on the same
    test rows: on a split, the exact sign-flip test (a row's difference is a whole multiple of 1/draws, so every
    sign pattern is counted: no floor); over folds, the corrected resampled t-test of ``featx probe``."""
    plan, per_fold = task.plan, [[result] for result in top]
    scores_top, scores_random = row_scores(task, per_fold), row_scores(task, random)
    if plan.is_split:
        test = plan.folds[0][1]
        groups = None if plan.groups is None else plan.groups[test]
        return significance.lattice_sign_flip(scores_top[test], scores_random[test], len(random[0]), groups)
    return significance.paired_p_value(plan, task.y, scores_top, scores_random, 0, 0, _as_score)


def compare_with_random(task: Task, per_choice: dict) -> dict[tuple, dict]:
    """Each top-k choice against the random k of its fraction on the same test rows (``p_vs_random``), with Holm's
    correction over the tests: key -> p_vs_random, p_vs_random_holm, significant_vs_random."""
    keys = [key for key in per_choice if key[0] == "top" and ("random", "-", key[2]) in per_choice]
    p_values = [
        p_vs_random(task, [results[0] for results in per_choice[key]], per_choice[("random", "-", key[2])])
        for key in keys
    ]
    adjusted = significance.holm(p_values)
    return {
        key: {"p_vs_random": p, "p_vs_random_holm": a, "significant_vs_random": bool(a < significance.ALPHA)}
        for key, p, a in zip(keys, p_values, adjusted, strict=False)
    }


def fit_choices(X: np.ndarray, task: Task, rank, fractions, seed: int, draws: int = RANDOM_DRAWS):
    """Per choice, per fold, the FoldResult of each of its neuron sets, and each choice's k; ``rank(rows, seed)``
    scores the neurons from the training rows ``rows`` only."""
    per_choice: dict[tuple, list[list[ev.FoldResult]]] = {}
    sizes: dict[tuple, int] = {}
    for index, ((train, test), dev) in enumerate(zip(task.plan.folds, task.plan.dev, strict=False)):
        fold_seed = seed + 1000 * index
        scores = rank(train, fold_seed)
        choices = selections(scores, X.shape[1], fractions, np.random.default_rng(fold_seed), draws)
        choices.append(("all", "-", 1.0, [np.arange(X.shape[1])]))
        results = _fit_fold(X, task, [sets for *_, sets in choices], train, test, dev, fold_seed)
        for (selection, ranking, fraction, sets), fitted in zip(choices, results, strict=True):
            sizes[(selection, ranking, fraction)] = len(sets[0])
            per_choice.setdefault((selection, ranking, fraction), []).append(fitted)
    return per_choice, sizes


def _fit_fold(X: np.ndarray, task: Task, choices: list[list], train, test, dev, seed: int) -> list[list]:
    """The FoldResult of every neuron set of ``choices`` (lists of sets) on one outer fold: a logreg probe each, its
    C chosen on the fold's inner holdout (drawn once, whole groups with ``--group``) or its dev rows; the sets of
    one size solved together."""
    groups = task.plan.groups  # --group: the holdouts that choose C take whole groups
    holdout = None
    if dev is None:
        holdout = ev.inner_split(task.y[train], np.arange(len(train)), seed, None if groups is None else groups[train])
    by_size: dict[int, list[tuple[int, int]]] = {}
    for c, sets in enumerate(choices):
        for s, neurons in enumerate(sets):
            by_size.setdefault(len(neurons), []).append((c, s))
    results: list[list] = [[None] * len(sets) for sets in choices]
    for members in by_size.values():
        fitted = ev.run_logreg_sets(
            X,
            [choices[c][s] for c, s in members],
            task.y,
            train,
            test,
            dev,
            task.n_classes,
            DEFAULT_CS,
            False,
            seed,
            groups,
            holdout,
        )
        for (c, s), result in zip(members, fitted, strict=True):
            results[c][s] = result
    return results


def selection_curve(
    X: np.ndarray, task: Task, rank, fractions, seed: int, n_boot: int, draws: int = RANDOM_DRAWS
) -> list[dict]:
    """Accuracy of logreg probes retrained on selected neurons (rankings refitted per training part), each top k
    tested against the random k (the mean of ``draws`` random sets)."""
    per_choice, sizes = fit_choices(X, task, rank, fractions, seed, draws)
    tests = compare_with_random(task, per_choice)
    # The majority class of each training part on its test part: the accuracy a probe of no neuron reaches.
    majority = ev.summarise(task.plan, task.y, task.majority(), task.n_classes, n_boot, seed)["accuracy"]
    records = []
    for key, per_fold in per_choice.items():
        row = {**summarise_draws(task, per_fold, n_boot, seed), "majority": majority}
        selection, ranking, fraction = key
        records.append(
            {
                "fraction": fraction,
                "k": sizes[key],
                "selection": selection,
                "ranking": ranking,
                **{column: row[column] for column in SELECTION_COLUMNS if column in row},
                "draws": len(per_fold[0]),
                **tests.get(key, {}),
            }
        )
    return records
