"""One label column of a features file (or of a ``--labels`` file joined to it) made ready to probe: its rows,
class codes and evaluation plan.

The same rules as ``featx.probe``: rows with a missing label, or of a split value featx does not use
(``labels.in_split``: none of train, val and test, said in a note), are left out, classes are renumbered to
those present, and the plan is the file's train/test split when it has one, else seeded k-fold; with a group
column (``--group``), the folds take whole groups and a split with a group on both sides is refused, as probe's.
Used by erasure, neuron ranking, the complexity sweep and ``featx intervene``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ...errors import InputError
from ...io import looks_continuous
from ...options import Check, on_command_line, spoken_command, spoken_value
from ...store import FeatureFile
from .. import evaluation as ev
from ..labels import in_split
from ..shared_options import MIN_FOLDS, few_folds
from ..tasks.groups import group_rows, note_shared_texts


@dataclass
class Task:
    label: str
    kept: np.ndarray  # positions in the file of the labelled rows
    y: np.ndarray  # class codes 0..k-1 of those rows
    class_names: list[str]
    plan: ev.Plan
    groups: ev.Groups | None = None  # --group: the group of every labelled row (``plan.groups`` holds its codes)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    def file_groups(self, n_rows: int) -> np.ndarray | None:
        """The group code of every row of the file (-1: a row not probed); None without groups."""
        if self.groups is None:
            return None
        codes = np.full(n_rows, -1, dtype=np.int64)
        codes[self.kept] = self.groups.codes
        return codes

    def group_meta(self) -> dict:
        """``group`` and ``n_groups`` for a results file's meta, as featx probe records them (empty without)."""
        return {} if self.groups is None else {"group": self.groups.column, "n_groups": self.groups.count}

    def majority(self) -> list[ev.FoldResult]:
        return [ev.run_majority(self.y, train, test, self.n_classes) for train, test in self.plan.folds]

    def training_rows(self) -> np.ndarray:
        """Rows an eraser or ranking for the written output is fitted on: the train part of a split,
        every labelled row under cross-validation (there is no held-out part to protect then)."""
        return self.plan.folds[0][0] if self.plan.is_split else np.arange(len(self.y))


def default_label(features: FeatureFile, label: str | None) -> str:
    """``label`` (checked), else the column ``label``, else the first label column."""
    if label is not None:
        if label not in features.label_columns and features.has_words and label in features.word_label_columns():
            raise InputError(
                f"'{label}' is a word label of {features.path}: {_analyses()} work on sentence labels only",
                f"for word probes: {_probe_call(features.path, label)}",
            )
        features.labels(label)  # the clear "no label column" error
        return label
    columns = features.label_columns
    if not columns:
        raise InputError(f"{features.path} has no label columns", "add a label column to the corpus and extract again")
    return "label" if "label" in columns else columns[0]


def refuse_continuous(features: FeatureFile, label: str) -> None:
    """Refuse a numeric label column that looks continuous (the rule by which ``featx probe`` will not probe a
    column as classes): erasure, neuron ranking, the sweep and interventions have classification probes only, and
    every distinct value of such a column would be a class of its own."""
    names = features.label_names(label)
    labelled = int((features.labels(label) >= 0).sum())
    if features.label_values(label) is None or not looks_continuous(names, labelled):
        return
    _continuous(f"label '{label}' of {features.path}", names, _probe_call(features.path, label))


def _analyses(intervene: bool = False) -> str:
    """The analyses of sentence classes as their caller names them: commands, or Python functions."""
    cli = on_command_line()
    names = ["featx erase", "featx neurons", "--sweep"] if cli else [f"featx.probing.{name}" for name in _PYTHON]
    if intervene:
        names.append("featx intervene" if cli else "featx.interventions.intervene")
    return f"{', '.join(names[:-1])} and {names[-1]}"


_PYTHON = ("erase", "neurons", "sweep")


def _probe_call(path: Path, label: str) -> str:
    """``featx probe x.h5 --label pos`` on the command line, ``featx.probe('x.h5', label='pos')`` from Python."""
    return spoken_command("probe", Path(path), spoken_value(None, "label", label, "--label"))


def _continuous(what: str, names: list[str], regression: str) -> NoReturn:
    raise InputError(
        f"{what} is a continuous number ({len(names)} distinct values from {names[0]} to {names[-1]}): "
        f"{_analyses(intervene=True)} work on classes only",
        f"{regression} fits it by regression; for these, add a column of its classes (e.g. quantile bins) with "
        "featx labels add",
    )


def _label_codes(
    features: FeatureFile, label: str | None, labels: str | Path | None, join: str, notes: list[str]
) -> tuple[str, np.ndarray, list[str]]:
    """The label probed, the class code of every stored row (-1: missing) and the class names: a stored column,
    or with ``labels`` one of that file's, joined to the stored rows as ``featx probe --labels`` joins it."""
    if labels is None:
        label = default_label(features, label)
        refuse_continuous(features, label)
        return label, features.labels(label), features.label_names(label)
    from ..labels import joined_label

    column = joined_label(features, labels, join, label, notes)
    if column.looks_continuous:
        stored = f"stored (featx labels add {features.path} {labels}), {_probe_call(features.path, column.name)}"
        _continuous(f"label '{column.name}' of {labels}", column.names, stored)
    return column.name, np.asarray(column.codes), column.names


def load_task(
    features: FeatureFile,
    label: str | None,
    folds: int = 5,
    seed: int = 0,
    group: str | None = None,
    notes: list[str] | None = None,
    labels: str | Path | None = None,
    join: str = "id",
) -> Task:
    """The probing task of one label column (``label=None``: the default column); with ``labels`` (a file of label
    columns, ``--labels``), that file's column, joined by ``join`` as ``featx probe --labels`` joins it; with
    ``group`` (a stored label column or one of the ``labels`` file's, ``--group``), its rows kept together as
    ``featx probe --group`` keeps them; without it, a pair file's note of the sentences its rows share
    (``note_shared_texts``; the notes said go to ``notes``)."""
    if int(folds) < MIN_FOLDS:
        raise few_folds(spoken_value(None, "folds", folds, "--folds"))
    notes = [] if notes is None else notes
    label, codes, names = _label_codes(features, label, labels, join, notes)
    kept = np.flatnonzero(in_split(codes >= 0, features.split, notes, features.path))  # as featx probe keeps them
    y = codes[kept].astype(np.int64)
    ev.check_labels(y, names, label, features.path)
    present = np.unique(y)
    class_names = [names[code] for code in present]
    y = np.searchsorted(present, y)
    if group is None:  # a pair file whose rows share sentences: said as featx probe and featx fit say it
        note_shared_texts(features, kept, notes)
    groups = None if group is None else group_rows(features, group, kept, label, notes, labels, join)
    split = features.split
    plan = ev.make_plan(y, split[kept] if split is not None else None, int(folds), seed, class_names, label, groups)
    return Task(label, kept, y, class_names, plan, groups)


def positive(name: str, flag: str, *, hint: str, optional: bool = False) -> Check:
    """A check: ``name`` is a whole number above 0 (or None, when ``optional``)."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise InputError(f"{spoken_value(config, name, value, flag)} must be a positive number", hint)

    return check


def unit_fraction(name: str, flag: str) -> Check:
    """A check: ``name`` is None or a number in (0, 1]."""

    def check(config: Any) -> None:
        value = getattr(config, name)
        if value is None:
            return
        try:
            share = float(value)
        except (TypeError, ValueError):
            share = float("nan")
        if isinstance(value, bool) or not 0 < share <= 1:
            shown = f"{share:g}" if share == share else str(value)
            given = spoken_value(config, name, value, flag, shown=shown if on_command_line() else None)
            raise InputError(f"{given} is outside (0, 1]", f"e.g. {spoken_value(config, name, 0.05, flag)} for 5%")

    return check
