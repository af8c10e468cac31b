"""The outer evaluation of a probe: the train/test split of the rows or seeded stratified k-fold
(``make_plan``), the inner holdout of a training part (``inner_split``), the label checks that come first,
and ``FoldResult``, what one outer fold gives back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...options import Placeholder, spoken_value
from .groups import Groups, check_group_count, check_split_groups, check_training_groups, group_holdout, grouped_folds

TRAIN_VALUES = ("train",)
DEV_VALUES = ("dev", "validation", "valid", "val")
TEST_VALUES = ("test",)
INNER_HOLDOUT = 0.2  # share of a training part held out to choose C / stop early


# -- outer plan ------------------------------------------------------------------------------------
@dataclass
class Plan:
    """The outer evaluation: (train, test) row indices per fold, optionally a fixed dev part per fold, and
    the group of every row when rows are kept together (``--group``: folds, holdouts and resamples by group)."""

    evaluation: str  # "split" or "<k>-fold cv"
    folds: list[tuple[np.ndarray, np.ndarray]]
    dev: list[np.ndarray | None] = field(default_factory=list)
    groups: np.ndarray | None = None

    @property
    def is_split(self) -> bool:
        return self.evaluation == "split"


# A probe's solvers and analyses hold class x row arrays (probabilities, one-hot targets, class means): with
# 10^5 classes that is tens of GiB before the first step. A label is refused before any fitting when it has
# more than MAX_CLASSES classes, or more than MANY_CLASSES classes averaging under MIN_ROWS_PER_CLASS labelled
# rows each (most classes then have a single row: nothing to learn, and no fold can hold each class).
MAX_CLASSES = 10_000
MANY_CLASSES = 100
MIN_ROWS_PER_CLASS = 2


def check_labels(y: np.ndarray, names: list[str], column: str, path) -> None:
    """Refuse a label column a probe cannot fit: no values, one class, or too many classes for its rows."""
    present = np.unique(y)
    _check_class_count(len(present), len(y), column, path)
    if len(y) == 0:
        raise InputError(
            f"label column '{column}' of {path} has no values: every row's label is missing",
            f"pick another column with {spoken_value(None, 'label', 'NAME', '--label', shown='NAME')}",
        )
    if len(present) < 2:
        only = names[present[0]] if len(present) else "?"
        raise InputError(
            f"label column '{column}' of {path} has only one class ('{only}' in all {len(y)} labelled rows); "
            "a probe needs at least two",
            f"pick another column with {spoken_value(None, 'label', 'NAME', '--label', shown='NAME')}",
        )


def _check_class_count(classes: int, rows: int, column: str, path) -> None:
    too_many = classes > MAX_CLASSES
    if too_many or (classes > MANY_CLASSES and classes * MIN_ROWS_PER_CLASS > rows):
        limit = f"featx probes at most {MAX_CLASSES:,}" if too_many else f"fewer than {MIN_ROWS_PER_CLASS} rows a class"
        raise InputError(
            f"label column '{column}' of {path} has {classes:,} classes in {rows:,} labelled rows ({limit})",
            f"drop rare classes with {spoken_value(None, 'min_class_rows', Placeholder('N'), '--min-class-rows')}, "
            f"bin a numeric label with {spoken_value(None, 'bins', Placeholder('N'), '--bins')}, or probe a score "
            "with a regression probe",
        )


def make_plan(
    y: np.ndarray,
    split: np.ndarray | None,
    folds: int,
    seed: int,
    names: list[str],
    column: str = "label",
    groups: Groups | None = None,
) -> Plan:
    """A fixed train/test split when the rows carry one, else seeded stratified k-fold (by whole ``groups``)."""
    if split is not None:
        train, test, dev = split_parts(split)
        if len(train) and len(test):
            _check_split_classes(y, train, test, names, column)
            return grouped(Plan("split", [(train, test)], [dev if len(dev) else None]), groups)
    counts = np.bincount(y, minlength=len(names))
    present = np.flatnonzero(counts)
    smallest = present[np.argmin(counts[present])]
    if counts[smallest] < folds:
        raise InputError(
            f"class '{names[smallest]}' of label '{column}' has only {counts[smallest]} labelled row(s), "
            f"fewer than the {folds} cross-validation folds",
            f"use fewer folds ({spoken_value(None, 'folds', max(2, int(counts[smallest])), '--folds')}) or more data"
            if counts[smallest] >= 2
            else "a class with a single row cannot be cross-validated; add rows or drop that class",
        )
    if groups is not None:
        check_group_count(groups, folds)
        pairs = grouped_folds(y, groups, folds, seed, stratified=True)
        return grouped(Plan(f"{folds}-fold cv by {groups.column}", pairs, [None] * len(pairs)), groups)
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    pairs = [(train, test) for train, test in splitter.split(np.zeros(len(y)), y)]
    return Plan(f"{folds}-fold cv", pairs, [None] * len(pairs))


def column_plan(column, split, folds: int, seed: int, label: str) -> Plan:
    """The plan of a corpus's class label column (``featx.io.LabelColumn``) and split values, as its probe will make
    it once the corpus is extracted (``make_plan`` on the labelled rows): made first, so that a run that would fail
    on it (more folds than a class has rows) is refused before any forward pass (``featx lens``, ``featx study``)."""
    codes = np.asarray(column.codes)
    labelled = codes >= 0
    kept = np.asarray(split, dtype=object).astype(str)[labelled] if split is not None else None
    return make_plan(codes[labelled], kept, folds, seed, list(column.names), label)


def split_parts(split: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (train, test, dev) rows of a split column (values matched case-blind)."""
    values = np.char.lower(np.asarray(split, dtype=str))
    parts = (TRAIN_VALUES, TEST_VALUES, DEV_VALUES)
    train, test, dev = (np.flatnonzero(np.isin(values, part)) for part in parts)
    return train, test, dev


# The split values a probe uses, as a note names them: train, val (and its other spellings) and test.
USED_SPLITS = f"train, val ({', '.join(value for value in DEV_VALUES if value != 'val')}) and test"


def usable_split(values: np.ndarray, items: str = "rows", source: object = "the features file"):
    """Which of the items whose split ``values`` are given have one a probe uses (train, val and its aliases, test;
    case-blind): featx probe and featx fit leave the others out of fitting and scoring alike. Returns the mask and
    a note naming the other values with their counts (None when every value is used), e.g. ``2 rows with split
    'holdout' left out: split values other than train, val (dev, validation, valid) and test are not used``.
    ``items`` names what is counted (rows, words, word pairs). No usable value at all (e.g. treebank files named
    neither train, dev nor test, each its stem): the split is not used, every item kept and cross-validated, as
    without a split column, said in the note."""
    given = np.asarray(values, dtype=object).astype(str)
    usable = np.isin(np.char.lower(given), TRAIN_VALUES + DEV_VALUES + TEST_VALUES)  # as ``split_parts`` reads them
    if usable.all():
        return usable, None
    found, counts = np.unique(given[~usable], return_counts=True)
    order = np.argsort(-counts, kind="stable")
    listed = [f"{int(counts[i]):,} {_items(items, int(counts[i]))} with split {str(found[i])!r}" for i in order[:4]]
    if len(order) > 4:
        rest = int(counts[order[4:]].sum())
        others = len(order) - 4
        listed.append(f"{rest:,} {_items(items, rest)} with {others} other {_items('values', others)}")
    shown = ", ".join(listed[:-1]) + (" and " if len(listed) > 1 else "") + listed[-1]
    if not usable.any():
        return np.ones(len(given), bool), (
            f"no {items[:-1]} of {source} has a split value featx uses ({USED_SPLITS}): {shown}; the split is not "
            f"used, every {items[:-1]} cross-validated as without one (to use it, name each row's split train, val or "
            "test; a treebank's files: ...-train.conllu, ...-dev.conllu, ...-test.conllu)"
        )
    return usable, f"{shown} left out: split values other than {USED_SPLITS} are not used"


def _items(items: str, count: int) -> str:
    """``items`` (a plural in -s) as many as ``count``."""
    return items if count != 1 else items[:-1]


def grouped(plan: Plan, groups: Groups | None) -> Plan:
    """``plan`` with the group of every row (None: rows are their own units), its split checked for a group
    on both sides of the test rows and its training parts for two groups to choose C on."""
    if groups is None:
        return plan
    if plan.is_split:
        check_split_groups(groups, plan.folds[0][0], plan.folds[0][1], plan.dev[0])
    check_training_groups(groups, plan.folds, plan.dev)
    plan.groups = groups.codes
    return plan


def _check_split_classes(y, train, test, names, column) -> None:
    missing = sorted(set(np.unique(y[test])) - set(np.unique(y[train])))
    if len(np.unique(y[train])) < 2:
        raise InputError(f"the train split has only one class of label '{column}'", "check the split column")
    if missing:
        shown = ", ".join(f"'{names[code]}'" for code in missing)
        raise InputError(
            f"class(es) {shown} of label '{column}' appear in the test split but never in train",
            "check the split column, or drop it from the corpus to cross-validate instead",
        )


def inner_split(
    y: np.ndarray, rows: np.ndarray, seed: int, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A stratified (when possible) holdout of the training rows: (fit rows, validation rows); with ``groups``
    (the group of every row, indexed as ``y``), whole groups are held out. The same rows give the same holdout
    whatever codes their classes have: scikit-learn's ``StratifiedShuffleSplit`` draws class by class in the
    order of their codes, so the classes are coded by first appearance among ``rows`` for it (renaming TREC's
    classes moved the holdout, and with it one layer's C, from a test accuracy of 0.733 to 0.450)."""
    if groups is not None:
        fit, val = group_holdout(groups[rows], seed, y[rows])
        return rows[fit], rows[val]
    from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

    n_val = max(1, int(round(INNER_HOLDOUT * len(rows))))
    _, first, inverse = np.unique(y[rows], return_index=True, return_inverse=True)
    coded = np.argsort(np.argsort(first))[inverse.ravel()]  # each class's rank by its first row
    counts = np.bincount(coded)
    if counts.min() >= 2 and n_val >= len(counts):
        splitter = StratifiedShuffleSplit(n_splits=1, test_size=n_val, random_state=seed)
    else:
        splitter = ShuffleSplit(n_splits=1, test_size=n_val, random_state=seed)
    fit, val = next(splitter.split(np.zeros(len(rows)), coded))
    return rows[np.sort(fit)], rows[np.sort(val)]


# What held-out rows (a val split's, or a holdout of a training part) tune in each kind of probe.
TUNED = {
    "logreg": "C chosen",
    "svm": "C chosen",
    "ridge": "alpha chosen",
    "mlp": "early-stopped",
    "attn": "early-stopped",
}


def tuned_on(classifiers, regression: bool = False) -> str:
    """What held-out rows do for ``classifiers``, as a note says it: ``C chosen`` (logreg, svm, a stack's layers),
    ``alpha chosen`` (ridge), ``early-stopped`` (mlp, attn); a regression mlp early-stops on a holdout of its own
    training rows, so the held-out rows only score it (``scored``). Several kinds name their classifiers:
    ``C chosen (logreg, svm) and early-stopped (mlp)``."""
    kinds: dict[str, list[str]] = {}
    for name in classifiers:
        kind = "scored" if regression and name == "mlp" else TUNED.get(str(name), "C chosen")
        kinds.setdefault(kind, []).append(str(name))
    if len(kinds) == 1:
        return next(iter(kinds))
    return " and ".join(f"{kind} ({', '.join(names)})" for kind, names in kinds.items())


# Fewer val rows than MIN_VAL_ROWS (a sentence label's classes: fewer than MIN_VAL_PER_CLASS of one of the training
# classes) choose C, alpha or an early stop (and featx probe's row) on too little to trust: a note says so.
MIN_VAL_ROWS = 30
MIN_VAL_PER_CLASS = 5


def few_val_note(
    y: np.ndarray, train: np.ndarray, dev: np.ndarray | None, chosen: str, items: str = "rows", names=None
) -> str | None:
    """A note when the val rows ``dev`` (positions in ``y``, among or beside ``train``) that choose ``chosen`` (e.g.
    ``the saved head's C``) are too few: under ``MIN_VAL_ROWS``, or (``names``: the class names
    of a classifier's codes ``y``) under ``MIN_VAL_PER_CLASS`` of a class the training rows hold; None otherwise."""
    if dev is None or not len(dev):
        return None
    n, short = len(dev), ""
    if names is not None:
        trained = np.setdiff1d(np.unique(np.asarray(y)[train]), [-1])
        counts = np.array([np.count_nonzero(np.asarray(y)[dev] == code) for code in trained])
        if len(counts) and counts.min() < MIN_VAL_PER_CLASS:
            rarest = int(np.argmin(counts))
            short = f" ({int(counts[rarest])} of class {str(names[trained[rarest]])!r})"
    if n >= MIN_VAL_ROWS and not short:
        return None
    under = f"under {MIN_VAL_ROWS} val {items}" + (
        f", or under {MIN_VAL_PER_CLASS} of a class" if names is not None else ""
    )
    return (
        f"only {n} val {_items(items, n)}{short} chose {chosen}: a choice on so few is unreliable (featx notes "
        f"{under}); add val {items}, or mark them train so that a holdout of the train {items} chooses instead"
    )


# Fewer scored rows than MIN_TEST_ROWS (a split's test rows; every row scored over the folds under cross-validation)
# give a score and interval too coarse to mean much: a warning says so (featx probe's and featx fit's).
MIN_TEST_ROWS = 30
SCORES_OF = {"accuracy": "accuracies", "macro_f1": "macro-F1 scores", "balanced_accuracy": "balanced accuracies"}


def few_scored_note(scored: int, is_split: bool, metric: str, items: str = "rows") -> str | None:
    """The warning when only ``scored`` rows (``items``) are scored, under ``MIN_TEST_ROWS``; None otherwise."""
    if scored >= MIN_TEST_ROWS:
        return None
    what = f"test {items}" if is_split else f"{items} scored over all folds"
    share = f"{1 / max(scored, 1):.2f}"
    moves = f"each {items[:-1] if items.endswith('s') else items} moves accuracy by {share}"
    if metric != "accuracy":
        moves = f"each {items[:-1] if items.endswith('s') else items} is {share} of them"
    return (
        f"warning: only {scored} {what}: {SCORES_OF.get(metric, metric)} and their intervals are too coarse to mean "
        f"much ({moves}); use at least {MIN_TEST_ROWS}"
    )


@dataclass
class FoldResult:
    """What one outer fold of a probe gives: its test predictions, the C chosen, the fit time, for a
    stacked probe the weight of each layer, and ``validation``: (rows, predictions) of the held-out part
    of the fold's training part (the inner holdout or the dev rows), that the best layer is chosen on
    (None: the probe takes no part in that choice, e.g. the majority class)."""

    predictions: np.ndarray
    C: float = float("nan")
    fit_seconds: float = 0.0
    layer_weights: np.ndarray | None = None
    validation: tuple[np.ndarray, np.ndarray] | None = None
