"""``ProbePlan``: what one probing run's ``ProbeConfig`` resolves to against its features file: which
file, which task (classification or regression) at which level (sentence, word, arc), which label
column and classifiers, the poolings, sites and layer specs probed, the outer evaluation folds, and the
notes gathered on the way.

``resolve_plan`` decides the file, task and level once per run; the task chosen (``api.task_for``)
resolves the rest against the file, each in its own way (word probes read word poolings and single
layers, ``--labels`` are joined), and holds the completed plan (``ProbePlan.resolved``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..options import Placeholder, joined, spoken, spoken_command, spoken_value
from ..selection import parse_layer_specs
from ..state import given_or_last
from ..store import HIDDEN_SITE, FeatureFile
from .config import TASKS, ProbeConfig
from .evaluation import few_val_note, tuned_on
from .evaluation.selection import check_metric
from .inputs import ALL_SITES, check_corpus, check_outputs, note_derived, note_prompted, open_probed
from .meta import Level, Task, package_versions
from .results import check_name_length, probe_names
from .shared_options import refuse_word_group
from .tasks.word_items import HEAD_LABEL

MIN_DISTINCT = 10  # a numeric column with at least this many distinct values is probed as regression

if TYPE_CHECKING:
    from .evaluation import Plan


@dataclass(frozen=True)
class ProbePlan:
    """One probing run, decided: its options, file, task and level, then (``resolved``) its label,
    classifiers, poolings, sites, layer specs and outer folds."""

    config: ProbeConfig
    path: Path
    task: Task
    level: Level
    label: str | None  # the label probed; None until the task chooses it (--labels, or a word label)
    classifiers: tuple[str, ...]
    started: float  # time.perf_counter() at the start of the run (the meta's seconds)
    notes: list[str] = field(default_factory=list)  # messages for the user, gathered along the run
    # Resolved by the task against the file:
    poolings: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()
    layer_specs: tuple[str, ...] = ()  # the names of the layer specs probed (the hidden states')
    evaluation: Plan | None = None  # the outer folds (the file's split, or k-fold)
    metric: str = "accuracy"  # what the best row is chosen in (on training rows) and scored in (--metric)

    @property
    def allow_partial(self) -> bool:
        return bool(self.config.allow_partial)

    def resolved(
        self,
        label: str,
        classifiers: list[str],
        poolings: list[str],
        sites: list[str],
        layer_specs: list[str],
        evaluation: Plan,
        level: Level | None = None,
        y: np.ndarray | None = None,
        names: list[str] | None = None,
    ) -> ProbePlan:
        """The plan completed by its task (``level``: a word task's, word or arc; ``y``: the labels the folds index,
        ``names`` a sentence label's class names, for the note on too few val rows)."""
        note = trained_note(evaluation, classifiers, self.task, level or self.level)
        few = None if y is None else few_val(evaluation, classifiers, self.task, level or self.level, y, names)
        self.notes.extend(line for line in (note, few) if line is not None)
        return replace(
            self,
            level=self.level if level is None else level,
            label=label,
            classifiers=tuple(classifiers),
            poolings=tuple(poolings),
            sites=tuple(sites),
            layer_specs=tuple(layer_specs),
            evaluation=evaluation,
        )

    def meta_fields(self, workers: int) -> dict[str, Any]:
        """The metadata every task writes alike, from the resolved plan (``seconds``: so far)."""
        config, evaluation = self.config, self.evaluation
        assert evaluation is not None and self.label is not None, "a task resolves the plan first"
        return {
            "task": self.task,
            "level": self.level,
            "features_file": str(Path(self.path).resolve()),
            "label": self.label,
            "evaluation": evaluation.evaluation,
            "folds": int(config.folds) if not evaluation.is_split else None,
            **_group_fields(config, evaluation),
            **({"labels_file": str(config.labels), "join": config.join} if config.labels is not None else {}),
            "n_dev": int(len(evaluation.dev[0])) if evaluation.is_split and evaluation.dev[0] is not None else 0,
            "seed": int(config.seed),
            "n_bootstrap": int(config.n_bootstrap),
            "classifiers": list(self.classifiers),
            "poolings": list(self.poolings),
            "sites": list(self.sites),
            "layer_specs": list(self.layer_specs),
            "control": bool(config.control),
            "jobs": workers,
            "seconds": round(time.perf_counter() - self.started, 3),
            "versions": package_versions(),
            "notes": list(self.notes),
        }


ITEMS = {Level.SENTENCE: "rows", Level.WORD: "words", Level.ARC: "word pairs"}  # what a level's probes score


def trained_note(evaluation: Plan, classifiers: list[str], task: Task, level: Level) -> str | None:
    """Under a split, which rows trained and tested the probes and what the val rows did for them (C chosen, alpha
    chosen, early-stopped: ``evaluation.tuned_on``); a word probe's only with val words (None: no note)."""
    if not evaluation.is_split:
        return None
    (train, test), dev = evaluation.folds[0], evaluation.dev[0]
    if dev is None and level != Level.SENTENCE:
        return None
    items, regression = ITEMS[Level(level)], task == Task.REGRESSION
    held = ""
    if dev is not None:
        own = f" (the mlp early-stops on a holdout of the train {items})" if regression and "mlp" in classifiers else ""
        held = f", {tuned_on(classifiers, regression)} on the {len(dev)} val {items}{own}"
    return f"trained on the {len(train)} train {items}{held}; tested on the {len(test)} test {items}"


# What val rows choose in each kind of probe, as the note on too few of them says it (a regression mlp early-stops
# on its own training rows: the val rows only score it).
CHOSEN_ON_VAL = {"logreg": "C", "svm": "C", "ridge": "alpha", "mlp": "early stop", "attn": "early stop"}


def few_val(evaluation: Plan, classifiers: list[str], task: Task, level: Level, y: np.ndarray, names) -> str | None:
    """Under a split with val rows, a note when they are too few to choose on (``evaluation.few_val_note``): they
    choose the probes' C, alpha or early stop and score the row chosen on the training part."""
    if not evaluation.is_split or evaluation.dev[0] is None:
        return None
    regression = task == Task.REGRESSION
    kinds = {CHOSEN_ON_VAL.get(str(name), "C") for name in classifiers if not (regression and name == "mlp")}
    what = " or ".join(sorted(kinds))
    chosen = f"the probes' {what} and the row chosen on the training part" if what else "the row chosen"
    items = ITEMS[Level(level)]
    given = names if Level(level) == Level.SENTENCE and not regression else None
    return few_val_note(y, evaluation.folds[0][0], evaluation.dev[0], chosen, items, given)


def _group_fields(config: ProbeConfig, evaluation: Plan) -> dict[str, Any]:
    """``group`` and ``n_groups`` of a run with ``--group`` (nothing without: word runs' sentences are their own)."""
    if config.group is None or evaluation.groups is None:
        return {}
    return {"group": str(config.group), "n_groups": int(len(np.unique(evaluation.groups)))}


def probe_config(config: ProbeConfig | str | Path | None = None, **options: Any) -> ProbeConfig:
    """The run's ``ProbeConfig``: ``config`` itself, the features path plus ``options``, or ``options``
    alone; never changes a given config (options make a checked copy); an unknown option is an
    ``InputError`` naming the known ones."""
    return ProbeConfig.build(config, **options)


def ignored_for_words(config) -> list[str]:
    """The notes of the sentence label's options a word label (or ``--arcs``) does not use, which were ignored
    silently: ``--bins`` (a word label's tags are classes already), ``--min-class-rows`` (it drops a sentence
    label's rare classes; a word probe keeps every tag its training words hold) and ``--task regression``. Notes,
    not refusals: a study's ``[probe]`` table gives them to every label of every corpus, a treebank's too."""
    what = "the label probed" if config.label is None else f"'{config.label}'"
    given = [
        (config.bins is not None, f"--bins {config.bins}", "its tags are classes already: word probes never bin"),
        (
            config.min_class_rows is not None,
            f"--min-class-rows {config.min_class_rows}",
            "a word probe keeps every tag of its training words",
        ),
        (
            str(config.task or "auto").lower() == "regression",
            "--task regression",
            "its tags are classes: word probes are classifiers",
        ),
    ]
    return [
        f"{flag} ignored: it applies to a sentence label, and {what} is a word label ({why})"
        for wanted, flag, why in given
        if wanted
    ]


def resolve_plan(config: ProbeConfig) -> ProbePlan:
    """Open the features file once and decide the run: word-level (a word label, or ``--arcs``),
    else the sentence label column and whether it is probed as classes or as a number."""
    started = time.perf_counter()
    path, using_last = given_or_last(config.features, "features")
    notes = [using_last] if using_last else []
    classifiers = tuple(config.classifier_list())
    with open_probed(path, config) as features:
        if not features.complete:
            notes.append(f"warning: {path} is incomplete; probing the {features.n_rows} rows written so far")
        check_corpus(features, notes)
        check_outputs(features, config)
        if config.labels is None and wants_words(features, config):  # a word-level label, or --arcs
            if config.group is not None:
                refuse_word_group(config.label)
            _refuse_word_sites(config)
            notes += ignored_for_words(config)  # --bins, --min-class-rows, --task regression
            level = Level.ARC if config.arcs else Level.WORD
            metric = check_metric(config.metric, False, str(config.label or "the word label"))
            if config.write:
                check_name_length(probe_names(Path(path), config.label, config.output))
            plan = ProbePlan(config, Path(path), Task.CLASSIFICATION, level, None, classifiers, started, notes)
            return replace(plan, metric=metric)
        label = None if config.labels is not None else default_label(features, config, notes)
        note_derived(features, label, notes)
        note_prompted(features, label, notes)  # a --template that writes the label into every prompt
        task = _task_of(features, label, config)
        if task is Task.REGRESSION:
            _refuse_stack_only(config, features.site_layers(), str(label))
    metric = check_metric(config.metric, task is Task.REGRESSION, str(label or config.label or "label"))
    if config.write:
        check_name_length(probe_names(Path(path), label, config.output))
    return replace(
        ProbePlan(config, Path(path), task, Level.SENTENCE, label, classifiers, started, notes), metric=metric
    )


def _refuse_word_sites(config: ProbeConfig) -> None:
    """``--site`` other than hidden on a word label: featx extract stores word vectors of the hidden states only, and
    a word probe read them whatever the sites named (an ffn probe printed the hidden states' scores)."""
    sites = config.site_list()
    if all(site in (HIDDEN_SITE, ALL_SITES) for site in sites):
        return
    given = spoken_value(config, "sites", ",".join(sites))
    raise InputError(
        f"{given}: a word probe reads the word vectors, and featx extract stores them for the hidden states only",
        f"leave out {spoken(config, 'sites', '--site')} (a site inside the layer is probed for a sentence label)",
    )


def _refuse_stack_only(config: ProbeConfig, layers: list[int], label: str) -> None:
    """``--layer stack`` alone on a number: stack is a classification meta-probe, so nothing would be probed."""
    if "stack" not in str(config.layers):
        return
    specs = parse_layer_specs(str(config.layers), layers, config=config)
    if all(spec.kind == "stack" for spec in specs):
        raise InputError(
            f"{spoken_value(config, 'layers', config.layers)}: stack combines linear probes of a class label, and "
            f"'{label}' is probed as a number (regression), so nothing is left to probe",
            f"combine layers with cat(...), e.g. {spoken_value(config, 'layers', 'cat(-4:)', shown=repr('cat(-4:)'))}"
            f", or probe classes of it with {spoken_value(config, 'bins', Placeholder('N'))}",
        )


def _task_of(features: FeatureFile, label: str | None, config: ProbeConfig) -> Task:
    """The task of a sentence label: ``--bins`` makes classes of a number (a continuous column too, which ``auto``
    would probe as a number), and cannot go with ``--task regression``; a ``--labels`` file's column (``label``
    None) is probed as classes."""
    if config.bins is not None:
        if str(config.task or "auto").lower() == Task.REGRESSION:
            raise InputError(
                f"{spoken_value(config, 'bins', config.bins)} makes classes of the label, and "
                f"{(regression := spoken_value(config, 'task', 'regression'))} probes its number",
                f"leave out {spoken(config, 'bins')} for a regression probe, or drop {regression} to probe the bins "
                "as classes",
            )
        return Task.CLASSIFICATION
    if label is None and str(config.task or "auto").lower() == Task.REGRESSION:  # a --labels file's column
        raise InputError(
            f"{(regression := spoken_value(config, 'task', 'regression'))} probes a stored label column; the columns "
            f"of {config.labels} ({spoken(config, 'labels')}) are probed as classes",
            f"store them first (featx labels add {features.path} {config.labels}), then probe the column with "
            f"{joined(spoken_value(config, 'label', 'NAME', shown='NAME'), regression)}",
        )
    return resolve_task(features, label, config.task) if label is not None else Task.CLASSIFICATION


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


def resolve_task(features: FeatureFile, label: str, task: str) -> Task:
    """Classification or regression for ``label``: ``task`` unless auto, where a numeric column with at
    least ``MIN_DISTINCT`` distinct values is regression."""
    task = str(task or "auto").lower()
    if task not in TASKS:
        raise InputError(
            f"{spoken_value(None, 'task', task, '--task')} is not known", "choose classification, regression or auto"
        )
    if task == Task.CLASSIFICATION:
        return Task.CLASSIFICATION
    values = features.label_values(label)
    if task == Task.REGRESSION:
        if values is None:
            raise InputError(
                f"label column '{label}' is not numeric: it cannot be probed as regression",
                f"drop {spoken_value(None, 'task', 'regression', '--task')} to probe it as classes; if a few of its "
                "cells are not numbers (a typo, "
                "'inf'), fix them, or extract again with --missing-labels VALUE to leave them unlabelled",
            )
        return Task.REGRESSION
    numeric = values is not None and len(np.unique(values[np.isfinite(values)])) >= MIN_DISTINCT
    return Task.REGRESSION if numeric else Task.CLASSIFICATION


def wants_words(features: Any, config: ProbeConfig) -> bool:
    """True when ``config`` asks for a word-level probe of ``features``: ``--arcs``, or a label that is a
    word label column and not a sentence label column."""
    has_words = bool(getattr(features, "has_words", False))
    if config.arcs:
        if not has_words:
            raise InputError(
                f"--arcs needs word-level data, and {features.path} has none",
                "extract a treebank (featx extract treebank.conllu) to get words, heads and relations",
            )
        return True
    if config.label is None:  # a file of words without sentence labels: its word labels
        return has_words and not features.label_columns
    if config.label in features.label_columns:
        return False
    if config.label == HEAD_LABEL and has_words:
        label, arcs = spoken_value(config, "label", HEAD_LABEL), spoken_value(config, "arcs", True)
        raise InputError(
            f"{label} is probed as arcs", f"add {arcs}: {spoken_command('probe', 'FEATURES', label, arcs)}"
        )
    return has_words and config.label in features.word_label_columns()
