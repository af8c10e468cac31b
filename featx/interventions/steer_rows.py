"""The rows of ``featx intervene --edit steer``: which rows each steering direction is computed from and which rows
it steers (the steering counterpart of ``passes.py``). The dose-response is never measured on a row whose vector the
direction it was steered along was computed from (featx's rule: probes never see test rows while fitting):

- The bundle's own direction (the bundle reads the edited layer, without ``--site``): ``featx fit``'s, fitted on its
  own rows; it steers the test split's rows of a file with one (never a row featx fit trained it on), else every
  row (``bundle_checks.seen_rows_note`` says when the bundle was fitted on this file's corpus, so that its training
  rows are among them).
- Otherwise the class-mean difference (``--toward`` minus the rest) of the stored vectors at the edited layer (or its
  ``--site``) of the label's rows, on the folds ``--edit erase`` uses (``InterventionPlan.tasks``: ``FOLDS``,
  ``--seed``, ``--group``):

  - a file with a split: the direction of the train split's rows (the rows erase's eraser is fitted on; not the val
    rows) steers the test split's rows, the only rows measured;
  - without one, cross-fitted: each fold's rows steered along the direction of the other folds' rows (with
    ``--group``, folds of whole groups, so no group is on both sides). Each fold's rows run through the model once
    per alpha and direction, with their own direction: the cost stays one pass over the rows per alpha and
    direction.

  Rows without a value of the label are in no fold and are not measured (as erase's probes, which score the label's
  rows only).
- The random baseline: one unit direction drawn with ``--seed``, the same for every fold (a random direction owes
  nothing to any row), as before.

Every part is checked here, before the model is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..options import on_command_line, spoken
from ..store import open_features
from .bundle_checks import reads_steered_layer, split_test_rows
from .config import said
from .edits import bundle_direction, stored
from .plan import InterventionPlan


@dataclass(frozen=True)
class Steering:
    """The parts of a dose-response: each ``(file rows, unit direction)`` runs through the model together, its rows
    steered along its direction; ``random`` is the baseline's unit direction; ``source`` and ``measured`` say in
    words where the directions came from and which rows are measured."""

    parts: tuple[tuple[np.ndarray, np.ndarray], ...]
    random: np.ndarray
    source: str
    measured: str
    notes: tuple[str, ...] = ()

    @property
    def rows(self) -> np.ndarray:
        """The measured file rows, in the order of every array ``gather`` returns."""
        return np.concatenate([rows for rows, _ in self.parts])

    def groups(self, plan: InterventionPlan) -> np.ndarray | None:
        """``--group``: the group of each measured row (``plan.row_groups``), the unit of the intervals."""
        return None if plan.row_groups is None else np.asarray(plan.row_groups)[self.rows]

    def gather(self, read: Callable[[np.ndarray, Any], Any], name: str | None = None) -> Any:
        """``read(rows, vector)`` of every part, concatenated (each element of a tuple apart) in ``rows``' order:
        ``vector`` the part's own direction (``name`` "probe"), the random one ("random") or None (unedited)."""
        pieces = []
        for rows, direction in self.parts:
            vector = None if name is None else direction if name == "probe" else self.random
            pieces.append(read(rows, vector))
        if isinstance(pieces[0], tuple):
            return tuple(np.concatenate(piece) for piece in zip(*pieces, strict=True))
        return np.concatenate(pieces)


def _unit(vector: np.ndarray, plan: InterventionPlan, where: str = "") -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        raise InputError(
            f"{said('toward', plan.config.toward)}: the direction at layer {plan.at[0]}{where} is zero",
            "steer at another layer",
        )
    return vector / norm


def _random(plan: InterventionPlan, width: int) -> np.ndarray:
    random = np.random.default_rng(plan.config.seed).standard_normal(width)
    return random / np.linalg.norm(random)


def steering_rows(plan: InterventionPlan) -> Steering:
    """The parts of the dose-response of ``plan`` (module docstring), every direction computed: nothing here needs
    the model."""
    if reads_steered_layer(plan.bundle, plan.config):
        return _bundle_steering(plan)
    return _class_means(plan)


def _bundle_steering(plan: InterventionPlan) -> Steering:
    """Along the bundle's own direction: a file with a test split measures its test rows only (``featx fit`` never
    trains on them, so a bundle fitted on this file's corpus never steers its own rows); without one, every row
    (``bundle_checks.seen_rows_note`` says when those include the bundle's training rows)."""
    layer, toward = plan.at[0], plan.config.toward
    with open_features(plan.features) as features:
        rows, test = np.arange(features.n_rows), split_test_rows(features)
    direction = _unit(bundle_direction(plan), plan)
    source = f"the bundle's direction toward {toward} at layer {layer}"
    if not len(test):
        return Steering(((rows, direction),), _random(plan, len(direction)), source, f"every row ({len(rows)})")
    note = (
        f"the file has a split: the dose-response along the bundle's direction is measured on the test split's "
        f"{len(test)} rows only (featx fit never trains a bundle on a test row)"
    )
    measured = f"the test split's rows ({len(test)})"
    return Steering(((test, direction),), _random(plan, len(direction)), source, measured, (note,))


def _direction(X: np.ndarray, inside: np.ndarray, rows: np.ndarray, plan: InterventionPlan, what: str) -> np.ndarray:
    """The unit class-mean difference of the file ``rows`` of ``X``: the mean of those ``inside`` the class steered
    toward minus that of the others (``what`` names the rows in an error)."""
    toward, held = plan.config.toward, inside[rows]
    if held.all() or not held.any():
        missing = toward if not held.any() else f"any class but {toward}"
        raise InputError(
            f"{said('toward', toward)}: {what} hold no row of {missing} to take the class-mean difference from",
            "give the label more rows (with --group: more groups) of each class, or steer at a layer the bundle reads",
        )
    vector = X[rows[held]].astype(np.float64).mean(axis=0) - X[rows[~held]].astype(np.float64).mean(axis=0)
    return _unit(vector, plan, f" ({what})")


def _class_means(plan: InterventionPlan) -> Steering:
    layer, toward, config = plan.at[0], str(plan.config.toward), plan.config
    task = plan.tasks[plan.label]  # loaded and checked by make_plan, on --edit erase's folds
    with open_features(plan.features) as features:
        X = stored(features, plan, layer)
        unlabelled = features.n_rows - len(task.kept)
    if toward not in task.class_names:
        raise InputError(
            f"{said('toward', toward)}: no row of '{plan.label}' has that class",
            f"steer toward a class of '{plan.label}' ({', '.join(map(str, task.class_names))})",
        )
    inside = np.zeros(len(X), dtype=bool)
    inside[task.kept[task.y == task.class_names.index(toward)]] = True
    where = f"layer {layer}" + (f"'s {config.site}" if config.site else "")
    what = f"the class-mean difference ({toward} minus the rest) at {where}"
    parts: tuple[tuple[np.ndarray, np.ndarray], ...]
    if task.plan.is_split:
        train, test = (task.kept[part] for part in task.plan.folds[0])
        parts = ((test, _direction(X, inside, train, plan, "the train split's rows")),)
        source, measured = f"{what} of the train split's rows", f"the test split's labelled rows ({len(test)})"
        note = (
            f"the file has a split: the steering direction is the class-mean difference of the train split's "
            f"{len(train)} rows, and the dose-response is measured on the test split's {len(test)} rows only (never "
            "on a row the direction was computed from; nor on the val rows)"
        )
    else:
        parts = tuple(
            (task.kept[test], _direction(X, inside, task.kept[train], plan, f"the training rows of fold {k + 1}"))
            for k, (train, test) in enumerate(task.plan.folds)
        )
        source, measured, note = _cross_fitted(plan, what, len(parts), len(task.kept))
    notes = [note]
    if unlabelled:
        notes.append(f"{unlabelled} row(s) without a value of '{plan.label}' are not measured (as erase's probes)")
    return Steering(parts, _random(plan, X.shape[1]), source, measured, tuple(notes))


def _cross_fitted(plan: InterventionPlan, what: str, k: int, n_rows: int) -> tuple[str, str, str]:
    """The direction's source, the rows measured and the note of a dose-response cross-fitted over ``k`` folds."""
    by = f" by whole groups of {plan.config.group}" if plan.config.group else ""
    erase = "--edit erase's" if on_command_line() else f"{said('edit', 'erase')} folds them"
    note = (
        f"the file has no split: the label's rows are in {k} folds{by} (as {erase}); each fold's rows are "
        f"steered along the class-mean difference of the other {k - 1} folds' rows, never their own (one pass over "
        "the rows per alpha and direction, each fold's rows with their own direction); the random direction is one, "
        f"drawn with {spoken(None, 'seed', '--seed')}, for every fold"
    )
    source = f"{what} of the other folds' rows ({k} folds{by}), each fold's own"
    return source, f"every labelled row ({n_rows}), each fold's along its own direction", note


__all__ = ["Steering", "steering_rows"]
