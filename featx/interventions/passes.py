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
eraser a user would apply) edits the pass the drift, bundle and loss rows read; its rank is the table's ``rank``.
The random control depends on the rank alone: one control pass per distinct rank, fold k's that of its eraser."""

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
    ``erasers[key]``; ``erasers`` holds every distinct edit (one edited pass each), ``folds`` the key of each fold's
    eraser per probed label, ``controls`` the random control of each rank they remove."""

    layer: int
    key: bytes
    erasers: dict[bytes, Any]
    folds: dict[str, list[bytes]]
    controls: dict[int, Any] = field(default_factory=dict)

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

    def control_readers(self, rank: int) -> dict[str, list[int]]:
        """Per probed label, the folds whose control probes read the control pass of ``rank``."""
        found = {
            name: [k for k, own in enumerate(keys) if rank_of(self.erasers[own]) == rank]
            for name, keys in self.folds.items()
        }
        return {name: folds for name, folds in found.items() if folds}


def layer_edits(plan: InterventionPlan, layer: int) -> LayerEdits:
    """The edits of ``layer`` for the probed labels' tasks (``plan.tasks``, loaded by ``make_plan``, the edited
    label's first), every eraser fitted: nothing here needs the model."""
    if plan.config.edit == "erase":
        edits = _erasers(plan, layer)
    else:
        folds = {name: [BUNDLE_KEY] * len(task.plan.folds) for name, task in plan.tasks.items()}
        edits = LayerEdits(layer, BUNDLE_KEY, {BUNDLE_KEY: edit_map(plan, layer)}, folds)
    ranks = sorted({edits.rank, *edits.fold_ranks()})
    edits.controls = {rank: control_map(plan, layer, rank) for rank in ranks}
    return edits


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
    return LayerEdits(layer, key, erasers, folds)


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
