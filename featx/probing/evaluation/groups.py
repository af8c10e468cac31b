"""Rows that must stay together (``featx probe --group COLUMN``: a document, a speaker, the sentence several
pairs share): the outer folds by whole groups, a split checked for groups on both sides of it, and the inner
holdouts (C, alpha, early stopping) by whole groups.

Rows of one group share more than their label (a topic, a voice, a sentence): a probe fitted on some of them
and scored on others scores what it memorised of the group. So no group is ever on both sides of a fit and a
score: not across the outer folds, not across a training part's holdout.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ...options import spoken_value

INNER_FOLDS = 5  # a training part's groups are dealt into this many parts; one is held out (about 20%)
MAX_ROWS = 5  # a message names this many rows of a group in each part


@dataclass(frozen=True)
class Groups:
    """The group of every probed row: ``codes`` 0..k-1 (per labelled row), ``names`` the value of each code.
    For messages only: ``shown``, what a user finds each group by where its name is not that (a group of the texts
    is named by its first row's number: ``the text "..."``), and ``rows`` / ``ids``, each probed row's row number
    in the features file and its id."""

    column: str
    codes: np.ndarray
    names: list[str]
    shown: list[str] | None = None
    rows: np.ndarray | None = None
    ids: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.names)

    def take(self, rows: np.ndarray) -> Groups:
        """The groups of these rows only (positions into ``codes``), coded 0..k-1 over the groups they hold."""
        present, inverse = np.unique(self.codes[rows], return_inverse=True)
        kept = [int(code) for code in present]
        return Groups(
            self.column,
            inverse.astype(np.int64),
            [self.names[code] for code in kept],
            None if self.shown is None else [self.shown[code] for code in kept],
            None if self.rows is None else self.rows[rows],
            None if self.ids is None else self.ids[rows],
        )

    def name_of(self, rows: np.ndarray) -> str:
        """The group of the first of ``rows`` as a user finds it (for messages)."""
        return self.described(int(self.codes[rows[0]]))

    def described(self, code: int) -> str:
        """The group ``code`` as a user finds it: its ``shown`` text, else its name in quotes."""
        return self.shown[code] if self.shown is not None else f"'{self.names[code]}'"

    def located(self, code: int, parts: tuple[tuple[str, np.ndarray], ...]) -> str:
        """Where the rows of group ``code`` lie in each of ``parts`` (name, positions) that holds some: ``train: rows
        0, 1; test: row 2`` by row number in the features file (and id, where ids are not the row numbers); the
        first ``MAX_ROWS`` of each part."""
        if self.rows is None:
            return ""
        said = []
        for part, positions in parts:
            mine = positions[self.codes[positions] == code]
            if len(mine):
                rows = [str(int(row)) for row in self.rows[mine[:MAX_ROWS]]]
                more = ", ..." if len(mine) > MAX_ROWS else ""
                ids = [str(value) for value in self.ids[mine[:MAX_ROWS]]] if self.ids is not None else rows
                named = f" (ids {', '.join(ids)}{more})" if ids != rows else ""
                said.append(f"{part}: row{'s' if len(mine) > 1 else ''} {', '.join(rows)}{more}{named}")
        return f" ({'; '.join(said)})" if said else ""


def _group(column: str) -> str:
    """``--group doc`` on the command line, ``group='doc'`` from Python (``options.spoken_value``)."""
    return spoken_value(None, "group", column, "--group")


def check_group_count(groups: Groups, folds: int) -> None:
    """Cross-validation by group needs more groups than folds (each training part holds two or more)."""
    if groups.count <= folds:
        raise InputError(
            f"{_group(groups.column)}: only {groups.count} group(s) of the labelled rows for {folds} folds; "
            "cross-validation by group needs more groups than folds (every training part must hold two, "
            "one to fit and one to choose C on)",
            f"use fewer folds ({spoken_value(None, 'folds', max(2, groups.count - 1), '--folds')})"
            if groups.count >= 3
            else "group by a finer column, or leave out --group",
        )


def stratified_group_splits(
    y: np.ndarray, codes: np.ndarray, n_splits: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Seeded stratified group k-fold (scikit-learn's ``StratifiedGroupKFold``, shuffled): ``n_splits`` (train,
    test) position pairs, every group (``codes``) on one side, stratified by ``y`` as far as whole groups allow.
    A class rarer than the splits is kept, without scikit-learn's warning: the callers say it in featx's words
    (or check it) where it matters. Every grouped fold of featx is drawn here: ``--group``'s folds,
    a word probe's sentence folds, the stacked probe's inner folds, ``featx fit``'s."""
    from sklearn.model_selection import StratifiedGroupKFold

    splitter = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The least populated class")
        return list(splitter.split(np.zeros(len(y)), y, codes))


def grouped_folds(y: np.ndarray, groups: Groups, folds: int, seed: int, stratified: bool) -> list:
    """Seeded k-fold over whole groups: stratified by class as far as whole groups allow (``stratified``), else
    the groups dealt in a seeded order, each to the fold with the fewest rows so far."""
    codes = groups.codes
    if stratified:  # a class rarer than the folds: checked before, in featx's words
        return stratified_group_splits(y, codes, folds, seed)
    sizes = np.bincount(codes, minlength=groups.count)
    fold_of, filled = np.zeros(groups.count, np.int64), np.zeros(folds, np.int64)
    for code in np.random.default_rng(seed).permutation(groups.count):
        fold_of[code] = int(np.argmin(filled))
        filled[fold_of[code]] += sizes[code]
    rows = np.arange(len(codes))
    return [(rows[fold_of[codes] != k], rows[fold_of[codes] == k]) for k in range(folds)]


def check_split_groups(groups: Groups, train: np.ndarray, test: np.ndarray, dev: np.ndarray | None) -> None:
    """Refuse a split with a group in two of its parts: test rows scored by a probe that saw (train) or chose C on
    (dev) other rows of the same group, or C chosen on dev rows whose groups the probe was fitted on."""
    parts = (("train", train, "test", test), ("dev", dev, "test", test), ("train", train, "dev", dev))
    for first, rows, second, others in parts:
        if rows is None or others is None or not len(rows) or not len(others):
            continue
        shared = np.intersect1d(np.unique(groups.codes[others]), groups.codes[rows])
        if len(shared):
            code = int(shared[0])
            example = groups.described(code) + groups.located(code, ((first, rows), (second, others)))
            why = (
                "the test score would count what the probe memorised of them"
                if second == "test"
                else "C would be chosen on rows the probe memorised through their group"
            )
            raise InputError(
                f"{_group(groups.column)}: {len(shared)} group(s) have rows in both the {first} and the {second} "
                f"split, e.g. {example}; {why}",
                "put every group in one split part of the corpus and extract it again (or extract a copy without "
                "its split column, to cross-validate by group), or leave out --group",
            )


def check_training_groups(groups: Groups, pairs: list, dev: list) -> None:
    """Every training part that chooses C on a holdout of itself holds two groups or more."""
    for (train, _), held in zip(pairs, dev, strict=False):
        if held is None and len(np.unique(groups.codes[train])) < 2:
            raise InputError(
                f"{_group(groups.column)}: a training part holds a single group ({groups.name_of(train)}), "
                "so C cannot be chosen on other groups than those fitted",
                "give the training part more groups, or add a dev split part",
            )


def group_holdout(codes: np.ndarray, seed: int, y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positions (fit, validation) of rows whose groups are ``codes``: about 1/``INNER_FOLDS`` of the groups held
    out whole, stratified by ``y`` as far as whole groups allow (``y`` None: groups drawn at random)."""
    unique = np.unique(codes)
    if len(unique) < 2:
        raise InputError(
            "a training part holds a single group: C cannot be chosen on other groups than those fitted",
            "give the training part more groups, or leave out --group",
        )
    positions = np.arange(len(codes))
    parts = min(INNER_FOLDS, len(unique))
    if y is not None:
        is_val = stratified_holdout(y, codes, parts, seed)
        return positions[~is_val], positions[is_val]
    rng = np.random.default_rng(seed)
    held = rng.choice(unique, size=max(1, int(round(len(unique) / parts))), replace=False)
    is_val = np.isin(codes, held)
    return positions[~is_val], positions[is_val]


def stratified_holdout(y: np.ndarray, codes: np.ndarray, parts: int, seed: int) -> np.ndarray:
    """Which rows are held out (a mask): whole groups, until each class has about 1/``parts`` of its rows out.
    The groups are taken in a seeded order, and one goes out when it brings the held-out share of the classes
    closer to the target: the sum of each class's distance to it, a share above it counting five times (a
    frequent class pushed past its fifth by a group that helps the others is what spoils a greedy holdout).
    One pass over the groups with a vector of the classes each: a treebank's 15,000 training sentences in about
    0.2 s, where scikit-learn's ``StratifiedGroupKFold`` (every fold of it, for one holdout) takes 3 s; each
    class within about 1 point of its fifth there. At least one group is held out and one kept."""
    groups, group_of = np.unique(codes, return_inverse=True)
    classes, class_of = np.unique(y, return_inverse=True)
    n_groups, n_classes = len(groups), len(classes)
    tally = np.bincount(group_of * n_classes + class_of, minlength=n_groups * n_classes)
    counts = tally.reshape(n_groups, n_classes).astype(np.float64) / np.bincount(class_of)  # shares of each class
    order = np.random.default_rng(seed).permutation(n_groups)
    target, held, out = np.full(n_classes, 1.0 / parts), np.zeros(n_classes), np.zeros(n_groups, bool)

    def distance(shares: np.ndarray) -> float:
        off = shares - target
        return float(np.abs(off).sum() + 4.0 * np.clip(off, 0.0, None).sum())

    for group in order:
        moved = held + counts[group]
        if distance(moved) < distance(held) - 1e-9:  # not on rounding: the same rows give the same holdout
            held, out[group] = moved, True  # whatever order their classes are coded in
    if not out.any():
        out[order[0]] = True
    if out.all():
        out[order[-1]] = False
    return out[group_of]
