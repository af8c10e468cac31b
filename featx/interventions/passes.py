"""The edited passes of one ``--at`` layer, and which of them each probe's fold reads. A probe's after (and control)
column never reads a pass edited by an eraser that saw the rows that fold scores (featx's rule: probes never see
test rows while fitting, nor while choosing a layer, pooling, C or eraser; ``featx erase`` fits its eraser inside
every training part of the evaluation plan for the same reason):

- ``--edit erase``, a file with a split: one eraser, fitted on the train split, edits one pass that every probe
  scored on the test split reads (no such probe scores a train row).
- ``--edit erase`` under cross-validation (no split; or a label cross-validated beside a split, an amnesic label
  with no labelled test row, whose folds score train rows): each fold of such a label's plan has an eraser fitted
  on that fold's training rows (an amnesic label's: those of them with a value of the edited label, with those
  values, as featx erase fits it; with ``--group``, the folds and INLP's holdout keep groups whole), and one pass
  runs per distinct eraser (keyed by its sorted fitting rows: the same rows, one fit, one pass).
- ``--edit project|mean``: the bundle's span, one pass (the bundle was fitted by featx fit on its own rows).

Beside them, the eraser fitted on ``task.training_rows()`` (the train split; every labelled row without one: the
eraser a user would apply); its rank is the table's ``rank``. The drift, bundle and loss rows read each row on a
pass whose edit never saw it (``held``): with a split, the rows the train split's eraser was not fitted on (its
labelled train rows are left out); without one, each labelled row on the pass of its fold's eraser (the fold that
scores it) and each unlabelled row on that of the eraser of every labelled row, which saw none of them. The bundle's
span reads every row (it was fitted by featx fit, not here).

Each edit has its own random control (``controls``, keyed as ``erasers``): as many random orthonormal directions as
it removes, drawn with the seed, centred as the edit is (on an eraser's mean, the mean of the rows it was fitted on;
on the bundle's mean for ``--edit mean``; uncentred for ``--edit project``): one control pass per edited pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store import open_features
from .edits import control_map, edit_map, erase_map, stored
from .plan import InterventionPlan

BUNDLE_KEY = b"bundle"  # the one edit of --edit project|mean


def rank_of(edit) -> int:
    """How many directions an ``EditMap`` removes."""
    return int(edit.left.shape[1])


@dataclass
class LayerEdits:
    """One edited layer's edits: ``edit`` (the eraser of the training rows, or the bundle's span) is
    ``erasers[key]``; ``erasers`` holds every distinct edit, ``folds`` the key of each fold's eraser per probed
    label, ``held`` the file rows the output rows read on each edit's pass (the module's docstring), ``controls``
    each edit's random control."""

    layer: int
    key: bytes
    erasers: dict[bytes, Any]
    folds: dict[str, list[bytes]]
    held: dict[bytes, np.ndarray]
    controls: dict[bytes, Any] = field(default_factory=dict)

    @property
    def edit(self):
        return self.erasers[self.key]

    @property
    def rank(self) -> int:
        return rank_of(self.edit)

    def fold_ranks(self) -> list[int]:
        return sorted({rank_of(self.erasers[key]) for keys in self.folds.values() for key in keys})

    def readers(self, key: bytes) -> dict[str, list[int]]:
        """Per probed label, the folds whose after probes read the pass of eraser ``key``."""
        found = {name: [k for k, own in enumerate(keys) if own == key] for name, keys in self.folds.items()}
        return {name: folds for name, folds in found.items() if folds}

    def run(self) -> list[bytes]:
        """The edits whose passes run (with their controls): those a fold reads or an output row reads rows of."""
        return [key for key in self.erasers if self.readers(key) or len(self.held.get(key, ()))]

    @property
    def measured(self) -> np.ndarray:
        """Every file row the output rows read, sorted."""
        return np.sort(np.concatenate([rows for rows in self.held.values()] or [np.zeros(0, np.int64)]))


def layer_edits(plan: InterventionPlan, layer: int) -> LayerEdits:
    """The edits of ``layer`` for the probed labels' tasks (``plan.tasks``, loaded by ``make_plan``, the edited
    label's first), every eraser fitted: nothing here needs the model."""
    if plan.config.edit == "erase":
        edits = _erasers(plan, layer)
    else:
        folds = {name: [BUNDLE_KEY] * len(task.plan.folds) for name, task in plan.tasks.items()}
        held = {BUNDLE_KEY: np.arange(_n_rows(plan))}
        edits = LayerEdits(layer, BUNDLE_KEY, {BUNDLE_KEY: edit_map(plan, layer)}, folds, held)
    edits.controls = {key: control_map(plan, layer, edits.erasers[key]) for key in edits.run()}
    return edits


def _n_rows(plan: InterventionPlan) -> int:
    with open_features(plan.features) as features:
        return int(features.n_rows)


def _erasers(plan: InterventionPlan, layer: int) -> LayerEdits:
    tasks = plan.tasks
    main = tasks[plan.label]
    with open_features(plan.features) as features:
        X = stored(features, plan, layer)
        n_rows = features.n_rows
    codes = np.full(n_rows, -1, dtype=np.int64)  # the edited label's class code per file row, -1 missing
    codes[main.kept] = main.y
    groups = main.file_groups(n_rows)
    erasers: dict[bytes, Any] = {}

    def fitted(rows: np.ndarray) -> bytes:
        """The key of the eraser fitted on these file rows (fitted once per set of rows)."""
        key = np.sort(rows).tobytes()
        if key not in erasers:
            held = None if groups is None else groups[rows]
            erasers[key] = erase_map(plan, layer, X[rows], codes[rows], main.n_classes, held)
        return key

    key = fitted(main.kept[main.training_rows()])
    folds = {}
    for name, task in tasks.items():
        if shares_split(main, task):  # the eraser of the train split saw no row this label's probes score
            folds[name] = [key] * len(task.plan.folds)
        else:
            folds[name] = [fitted(_fit_rows(task, train, codes)) for train, _ in task.plan.folds]
    return LayerEdits(layer, key, erasers, folds, _held(main, key, folds[plan.label], n_rows))


def _held(main, key: bytes, own: list[bytes], n_rows: int) -> dict[bytes, np.ndarray]:
    """The file rows the output rows read on each eraser's pass, none of them a row it was fitted on: with a split,
    every row but the train split's labelled ones, on the train split's eraser; without one, each fold's test rows
    on its eraser and the unlabelled rows on the eraser of every labelled row (``own``: the label's fold keys)."""
    unlabelled = np.setdiff1d(np.arange(n_rows), main.kept)
    if main.plan.is_split:
        return {key: np.setdiff1d(np.arange(n_rows), main.kept[main.training_rows()])}
    held: dict[bytes, list[np.ndarray]] = {key: [unlabelled]}
    for fold_key, (_, test) in zip(own, main.plan.folds, strict=True):
        held.setdefault(fold_key, []).append(main.kept[test])
    joined = {name: np.sort(np.concatenate(parts)) for name, parts in held.items()}
    return {name: rows for name, rows in joined.items() if len(rows)}


def shares_split(main, task) -> bool:
    """Whether ``task``'s probes may read the pass of the eraser fitted on the train split: both its plan and the
    edited label's are the file's split, so it scores test rows only. A label with no labelled test row is
    cross-validated over train rows, every one of which that eraser saw."""
    return bool(main.plan.is_split and task.plan.is_split)


def _fit_rows(task, train: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The file rows of a fold's training part that have a value of the edited label (all of them for its own)."""
    rows = task.kept[train]
    return rows[codes[rows] >= 0]


__all__ = ["BUNDLE_KEY", "LayerEdits", "layer_edits", "rank_of", "shares_split"]
