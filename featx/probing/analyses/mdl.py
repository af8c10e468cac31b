"""Minimum description length probing: the online code of Voita & Titov (2020).

The rows of the training data are put in a fixed, seeded order and cut into blocks at 0.1%, 0.2%,
0.4%, 0.8%, 1.6%, 3.2%, 6.25%, 12.5%, 25%, 50% and 100% of them. The first block is sent with the
uniform code (log2 K bits a label); every later block is sent with a probe trained on all the blocks
before it. The codelength is the total number of bits; the compression ratio is the uniform
codelength n*log2(K) divided by it (1 = the features tell nothing about the labels).

Everything a probe uses (scaler, the choice of C by the codelength of a holdout) comes from the blocks already sent,
so a receiver could rebuild every probe: the code is a real code, not a post-hoc score.

With ``groups`` (the sentence of each word or arc), the unit sent is the group: sentences are put in the
seeded order, the blocks are those fractions of the sentences, and the holdouts that choose C hold out
whole sentences, so no probe is scored on words of a sentence whose other words it was fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import evaluation as ev
from ..solvers import classifiers as clf

FRACTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)
MIX = 1e-4  # share of the uniform distribution mixed into the probe's: a class it never saw costs ~log2(K/MIX) bits
MIN_SEARCH_ROWS = 20  # below this many transmitted rows, C is not searched (the default grid middle is used)
SMALL_ROWS = 500  # below this many transmitted rows, C is chosen by 3-fold cross-validation, not one holdout


@dataclass
class OnlineCode:
    bits: float  # total online codelength
    uniform_bits: float  # n * log2(K)
    n_rows: int
    block_ends: list[int]

    @property
    def compression(self) -> float:
        return self.uniform_bits / self.bits if self.bits > 0 else float("inf")


def block_ends(n_rows: int, fractions=FRACTIONS) -> list[int]:
    """Increasing block end positions (at least one row in the first block, the last one = n_rows)."""
    ends: list[int] = []
    for fraction in fractions:
        end = min(n_rows, max(1, int(round(fraction * n_rows))))
        if not ends or end > ends[-1]:
            ends.append(end)
    if ends[-1] != n_rows:
        ends.append(n_rows)
    return ends


def _prior_probabilities(y_train: np.ndarray, n_classes: int) -> np.ndarray:
    counts = np.bincount(y_train, minlength=n_classes) + 1.0  # Laplace: what is sent before a probe can be fitted
    return counts / counts.sum()


def _codelength_search(Xs, targets, splits, cs, n_classes, seed) -> list[float]:
    """For each label vector of ``targets``, the C whose probes code held-out rows in the fewest bits (log-loss,
    not accuracy: the code pays for overconfident mistakes, which accuracy does not see). ``splits`` are (fit,
    held-out) row pairs; their bits are summed. Warm-started path per split, smallest C first, each vector stopped
    like the probe's; the vectors' fits at one C on one split are solved together (``classifiers.fit_together``: each
    the fit it gets alone)."""
    models = [[clf.make_linear("logreg", cs[0], False, seed) for _ in splits] for _ in targets]
    paths = [ev.CPath(None, gain=1e-9) for _ in targets]  # scored by minus the bits: the probes' stopping rule
    live = list(range(len(targets)))
    for C in sorted(cs):
        bits = dict.fromkeys(live, 0.0)
        for index, (fit_rows, val_rows) in enumerate(splits):
            fitting = [models[v][index] for v in live]
            for model in fitting:
                model.set_params(C=C)
            clf.fit_together(fitting, Xs[fit_rows], [targets[v][fit_rows] for v in live])
            for v, model in zip(live, fitting, strict=True):
                bits[v] += _bits(clf.linear_scores(model, Xs[val_rows], n_classes), targets[v][val_rows], n_classes)
        live = [v for v in live if paths[v].record(C, -bits[v], lambda: None)]
        if not live:
            break
    return [cs[0] if path.best_c is None else path.best_c for path in paths]


def held_out_splits(y: np.ndarray, seed: int, groups: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """3-fold (stratified where possible) splits of small training sets, where one 20% holdout is too
    noisy to choose C; a single stratified 20% holdout of large ones. With ``groups``, by whole group."""
    rows = np.arange(len(y))
    if groups is not None:
        return _group_splits(y, groups, seed)
    counts = np.bincount(y)
    if len(y) >= SMALL_ROWS:
        return [ev.inner_split(y, rows, seed)]
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter = (
        StratifiedKFold(3, shuffle=True, random_state=seed)
        if counts[counts > 0].min() >= 3
        else KFold(3, shuffle=True, random_state=seed)
    )
    splits = [(rows[fit], rows[val]) for fit, val in splitter.split(rows, y)]
    return [(fit, val) for fit, val in splits if len(np.unique(y[fit])) >= 2]


def _group_splits(y: np.ndarray, groups: np.ndarray, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The holdouts of ``held_out_splits`` drawn by group: 3 group folds of small sets, one ~20% of the
    groups held out of large ones (``evaluation.inner_split``: stratified as far as whole groups allow)."""
    rows = np.arange(len(y))
    unique = np.unique(groups)
    if len(unique) < 3:
        return []
    if len(y) >= SMALL_ROWS:
        splits = [ev.inner_split(y, rows, seed, groups)]
    else:
        rng = np.random.default_rng(seed)
        fold_of = dict(zip(rng.permutation(unique).tolist(), np.arange(len(unique)) % 3, strict=False))
        fold = np.array([fold_of[g] for g in groups.tolist()])
        splits = [(rows[fold != k], rows[fold == k]) for k in range(3)]
    return [(fit, val) for fit, val in splits if len(np.unique(y[fit])) >= 2]


def _bits(probabilities: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    probabilities = (1 - MIX) * probabilities + MIX / n_classes
    return float(-np.log2(probabilities[np.arange(len(y)), y]).sum())


def _block_probabilities(X, labels, train, block, n_classes, cs, seed, groups=None) -> list[np.ndarray]:
    """P(label) for the rows of ``block`` from a logistic probe trained on the rows ``train``, one per label
    vector of ``labels`` (the prior while fewer than two classes were sent): one scaler and one set of C holdouts
    (drawn from the first vector's labels) for all, each vector its own C and probe, solved together."""
    scaler = ev.fit_scaler(X, train)
    Xs = scaler(X[train])
    targets = [y[train] for y in labels]
    fitted = [v for v, y in enumerate(targets) if len(np.unique(y)) >= 2]
    chosen = dict.fromkeys(fitted, float(np.median(cs)))
    if 0 in fitted and len(train) >= MIN_SEARCH_ROWS and len(cs) > 1:
        splits = held_out_splits(targets[0], seed, None if groups is None else groups[train])
        searched = [v for v in fitted if splits and all(len(np.unique(targets[v][fit])) >= 2 for fit, _ in splits)]
        if searched:
            found = _codelength_search(Xs, [targets[v] for v in searched], splits, cs, n_classes, seed)
            chosen.update(zip(searched, found, strict=True))
    models = {v: clf.make_linear("logreg", chosen[v], False, seed) for v in fitted}
    if models:
        clf.fit_together(list(models.values()), Xs, [targets[v] for v in models])
    X_block = scaler(X[block])
    return [
        clf.linear_scores(models[v], X_block, n_classes)
        if v in models
        else np.tile(_prior_probabilities(targets[v], n_classes), (len(block), 1))
        for v in range(len(labels))
    ]


def coded_rows(plan) -> np.ndarray | None:
    """The rows whose labels the online code sends: a split's training part, dev included; None (every
    row) under cross-validation. ``plan``: an evaluation plan with ``folds``, ``dev`` and ``is_split``."""
    if not plan.is_split:
        return None
    return np.sort(np.concatenate([part for part in (plan.folds[0][0], plan.dev[0]) if part is not None]))


def transmission_order(
    rows: np.ndarray, seed: int, fractions=FRACTIONS, groups: np.ndarray | None = None
) -> tuple[np.ndarray, list[int]]:
    """The seeded order in which ``rows`` are sent and the block end positions in it. With ``groups``
    (the group of every row of ``X``), whole groups are shuffled, each group's rows stay together in
    their own order, and every block ends on a group boundary."""
    rng = np.random.default_rng(seed)
    if groups is None:
        order = rows[rng.permutation(len(rows))]
        return order, block_ends(len(order), fractions)
    unique, inverse = np.unique(groups[rows], return_inverse=True)
    rank = np.empty(len(unique), np.int64)
    rank[rng.permutation(len(unique))] = np.arange(len(unique))
    order = rows[np.argsort(rank[inverse], kind="stable")]
    sizes = np.bincount(rank[inverse], minlength=len(unique))
    cumulative = np.concatenate([[0], np.cumsum(sizes)])
    return order, [int(cumulative[end]) for end in block_ends(len(unique), fractions)]


def online_codelength(
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    rows: np.ndarray | None = None,
    seed: int = 0,
    cs=(1e-3, 1e-2, 1e-1, 1.0, 10.0),
    fractions=FRACTIONS,
    groups: np.ndarray | None = None,
) -> OnlineCode:
    """The online codelength (bits) of the labels ``y[rows]`` given the features ``X[rows]``.

    ``X`` is (n, d) (standardised per block from the sent rows only), ``y`` holds class codes 0..K-1;
    ``groups`` (n,) makes the sentence, not the row, the unit of the blocks and of the C holdouts.
    """
    return online_codelengths(X, [y], n_classes, rows, seed, cs, fractions, groups)[0]


def online_codelengths(
    X: np.ndarray,
    labels: list[np.ndarray],
    n_classes: int,
    rows: np.ndarray | None = None,
    seed: int = 0,
    cs=(1e-3, 1e-2, 1e-1, 1.0, 10.0),
    fractions=FRACTIONS,
    groups: np.ndarray | None = None,
) -> list[OnlineCode]:
    """``online_codelength`` of each label vector of ``labels`` (the real labels first, then the control task's)
    given the same features: the same order, blocks (whole groups), scaler and C holdouts (stratified on the first
    vector's labels, as the control probe shares the real one's), each vector its own C and probe. The first
    vector's code is bit for bit the one ``online_codelength`` gives it alone."""
    rows = np.arange(len(labels[0])) if rows is None else np.asarray(rows)
    order, ends = transmission_order(rows, seed, fractions, groups)
    uniform_per_row = np.log2(n_classes)
    bits = [ends[0] * uniform_per_row for _ in labels]
    for start, stop in zip(ends[:-1], ends[1:], strict=False):
        train, block = order[:start], order[start:stop]
        probabilities = _block_probabilities(X, labels, train, block, n_classes, tuple(cs), seed, groups)
        for index, (y, p) in enumerate(zip(labels, probabilities, strict=True)):
            bits[index] += _bits(p, y[block], n_classes)
    uniform = float(len(order) * uniform_per_row)
    return [OnlineCode(float(total), uniform, len(order), ends) for total in bits]
