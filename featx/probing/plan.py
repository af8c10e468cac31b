"""``ProbePlan``: what one probing run's ``ProbeConfig`` resolves to against its features file, before
any probe is fitted: which file, which task (classification or regression) at which level (sentence,
word, arc), which label column, which classifiers, and the notes gathered while deciding.

``resolve_plan`` makes that decision once per run; the task chosen (``tasks.task_for``) then resolves the
rest against the file (layer specs, poolings, sites, the evaluation folds) and plans its jobs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..state import given_or_last
from ..store import FeatureFile
from .config import ProbeConfig
from .inputs import check_corpus
from .meta import Level, Task


@dataclass(frozen=True)
class ProbePlan:
    """One probing run, decided: its options, file, task, level and (sentence runs) label column."""

    config: ProbeConfig
    path: Path
    task: Task
    level: Level
    label: str | None  # the label probed; None until the task chooses it (--labels, or a word label)
    classifiers: tuple[str, ...]
    started: float  # time.perf_counter() at the start of the run (the meta's seconds)
    notes: list[str] = field(default_factory=list)  # messages for the user, gathered along the run

    @property
    def allow_partial(self) -> bool:
        return bool(self.config.allow_partial)


def probe_config(config: ProbeConfig | str | Path | None = None, **options: Any) -> ProbeConfig:
    """The run's ``ProbeConfig``: ``config`` itself, the features path plus ``options``, or ``options``
    alone; never changes a given config (options make a copy)."""
    if isinstance(config, (str, Path)):
        config = ProbeConfig(features=config, **options)
    elif config is None:
        config = ProbeConfig(**options)
    elif options:
        config = replace(config, **options)
    config.validate()
    return config


def resolve_plan(config: ProbeConfig) -> ProbePlan:
    """Open the features file once and decide the run: word-level (a word label, or ``--arcs``),
    else the sentence label column and whether it is probed as classes or as a number."""
    from .tasks.regression import resolve_task
    from .tasks.words import wants_words

    started = time.perf_counter()
    path, using_last = given_or_last(config.features, "features")
    notes = [using_last] if using_last else []
    classifiers = tuple(config.classifier_list())
    with FeatureFile(path, allow_partial=config.allow_partial) as features:
        if not features.complete:
            notes.append(f"warning: {path} is incomplete; probing the {features.n_rows} rows written so far")
        check_corpus(features, notes)
        if config.labels is None and wants_words(features, config):  # a word-level label, or --arcs
            level = Level.ARC if config.arcs else Level.WORD
            return ProbePlan(config, Path(path), Task.CLASSIFICATION, level, None, classifiers, started, notes)
        label = None if config.labels is not None else default_label(features, config, notes)
        task = resolve_task(features, label, config.task) if label is not None else Task.CLASSIFICATION
    return ProbePlan(config, Path(path), task, Level.SENTENCE, label, classifiers, started, notes)


def default_label(features: FeatureFile, config: ProbeConfig, notes: list[str]) -> str:
    """The sentence label column to probe: ``--label``, else ``label``, else the first (said in a note)."""
    columns = features.label_columns
    if config.label is not None:
        features.labels(config.label)  # raises the clear "no label column" error
        return config.label
    if not columns:
        raise InputError(
            f"{features.path} has no label columns: the corpus had only its text (and id/split) columns",
            "add a label column to the corpus and extract again",
        )
    if "label" in columns:
        return "label"
    notes.append(
        f"no 'label' column; probing '{columns[0]}' (label columns: {', '.join(columns)}; choose with --label)"
    )
    return columns[0]
