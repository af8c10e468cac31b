"""``featx probe`` on word-level labels: one probe per layer and word pooling, folds by sentence.

``featx probe feats.h5 --label upos`` (a word label column), ``--label deprel --arcs`` (the relation of each
(head, dependent) pair from ``[h_head, h_dep, h_head * h_dep]``) and ``--label head --arcs`` (arc or not: each
word's gold head, a root word paired with itself, and one other candidate of its sentence). Beside the probes: the
majority class, the most frequent label of each word type (fitted on the training part), the word-type control
task (Hewitt & Liang 2019) and the Tenney layer summaries (scalar mix, expected layer). Features stream from the
file one layer at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...selection import parse_layer_specs, parse_poolings
from .. import evaluation as ev
from ..analyses.curves import parse_train_sizes
from ..analyses.word_curves import curve_job, curve_layers
from ..config import ProbeConfig
from ..evaluation.significance import add_significance
from ..meta import Level, ProbeMeta, Task, file_meta
from ..plan import ProbePlan
from ..prescan import require_finite_words
from ..results import COLUMNS, CURVE_COLUMNS, ProbeResult
from ..solvers.devices import solver_meta
from .base import choice_meta, mark_choices, run_task
from .tested_rows import word_rows_sha256
from .word_baseline import check_word_baseline
from .word_items import (
    HEAD_LABEL,
    WordTask,
    attachment_task,
    control_labels,
    items_in_split,
    opened_source,
    relation_task,
    sentence_plan,
    word_task,
)
from .word_jobs import WordInputs, mix_job, reference_rows, run_probe_job
from .word_predictions import prediction_table

WORD_CLASSIFIERS = ("logreg", "svm", "mlp")
WORD_COLUMNS = COLUMNS + ["level"]


def build_task(source: Any, config: ProbeConfig, notes: list[str] | None = None) -> WordTask:
    """The word or arc items of ``config``'s label (the default word label said in a note)."""
    label = config.label
    if label is None and not config.arcs:
        columns = source.word_label_columns()
        if not columns:
            raise InputError(
                f"{getattr(source, 'path', 'the file')} has no word label columns",
                "extract a treebank with labelled words (UPOS, DEPREL, ...)",
            )
        label = "upos" if "upos" in columns else columns[0]
        if notes is not None:
            notes.append(
                f"probing the word label '{label}' (word label columns: {', '.join(columns)}; choose with --label)"
            )
    if config.arcs:
        if label is None:
            label = "deprel" if "deprel" in source.word_label_columns() else HEAD_LABEL
        if label == HEAD_LABEL:
            return attachment_task(source, int(config.seed), notes)
        return relation_task(source, label, notes)
    assert label is not None  # the default word label is chosen above
    return word_task(source, label)


def word_layers(source: Any, config: ProbeConfig) -> list[int]:
    """The single layers probed (cat()/stack refused: the scalar-mix summary combines the layers)."""
    specs = parse_layer_specs(config.layers, source.layers, config=config)
    if any(spec.kind != "single" for spec in specs):
        raise InputError(
            "word-level probes take single layers (all, 0,3,6, -4:)",
            "cat()/stack are not available for words; the scalar-mix summary combines the layers",
        )
    return sorted({spec.layers[0] for spec in specs})


def word_classifiers(config: ProbeConfig) -> list[str]:
    """The classifiers of a word-level run; refused: attn and ridge, and --labels."""
    chosen = config.classifier_list()
    other = [name for name in chosen if name not in WORD_CLASSIFIERS]
    if other:
        raise InputError(
            f"classifier {', '.join(other)} is not available for word-level probes",
            f"choose from {', '.join(WORD_CLASSIFIERS)}",
        )
    if config.labels is not None:
        raise InputError(
            "--labels is not available for word-level probes yet",
            "leave it out; word labels come from the word input files (CoNLL-U, --columns, JSON Lines)",
        )
    return chosen


WORD_JOBS: dict[str, Callable[..., Any]] = {"mix": mix_job, "probe": run_probe_job, "curve": curve_job}
CONTROL_TASKS = {
    Level.WORD: "word type (lower-cased form) -> one fixed random label from the training label distribution",
    Level.ARC: "dependent's word type (deprel) or the pair of types (head) -> one fixed "
    "random label from the training label distribution",
}


@dataclass(frozen=True)
class WordRows:
    """Who the items are, for the per-row predictions file, and the file's model and corpus records."""

    ids: list[str]
    forms: Any
    offsets: np.ndarray
    file: dict


@dataclass(frozen=True)
class WordProbe:
    """A word-level (words or arcs) run, resolved against its features file or an in-memory source."""

    plan: ProbePlan
    inputs: WordInputs
    layers: list[int]
    poolings: list[str]
    curve_at: list[int]  # the layers of the learning curves (none without --train-sizes)
    sizes: list[float] | None
    rows: WordRows
    source: Any = None  # an open source object (tests), else the features file is opened by path
    baseline_model: str | None = None  # the --baseline file's model ("(random init)" marked)

    @classmethod
    def from_plan(cls, plan: ProbePlan, source: Any = None) -> WordProbe:
        config, notes, path = plan.config, plan.notes, plan.path
        classifiers = word_classifiers(config)
        with opened_source(path if source is None else source, plan.allow_partial) as opened:
            if not getattr(opened, "has_words", False):
                raise InputError(f"{path} has no word-level data", "extract a treebank: featx extract treebank.conllu")
            task = items_in_split(build_task(opened, config, notes), opened.split, notes, path)
            layers = word_layers(opened, config)
            poolings = parse_poolings(config.poolings, opened.word_poolings())
            folds = sentence_plan(task, opened.split, int(config.folds), int(config.seed), notes, classifiers)
            sizes = parse_train_sizes(config.train_sizes) if config.train_sizes is not None else None
            curve_at = curve_layers(opened, config, layers) if sizes else []
            offsets = np.asarray(opened.word_offsets(), np.int64)
            rows = WordRows(list(opened.ids), opened.word_forms(), offsets, file_meta(getattr(opened, "attrs", {})))
            baseline = None
            if config.baseline is not None:
                baseline = check_word_baseline(opened, config.baseline, layers, poolings, plan.allow_partial)
        training = folds.folds[0][0] if folds.is_split else np.arange(len(task.y))
        inputs = WordInputs(
            task,
            folds,
            control_labels(task, training, int(config.seed)) if config.control else None,
            classifiers,
            tuple(float(c) for c in config.cs),
            bool(config.balanced),
            int(config.seed),
            int(config.n_bootstrap),
            bool(config.mdl),
            bool(config.allow_partial),
            ev.Scoring(ev.check_metric(config.metric, False, task.label), task.n_classes),
        )
        specs = [str(layer) for layer in layers]
        plan = plan.resolved(task.label, classifiers, poolings, ["hidden"], specs, folds, level=task.level, y=task.y)
        plan = replace(plan, metric=inputs.scoring.metric)
        return cls(plan, inputs, layers, poolings, curve_at, sizes, rows, source, baseline)

    @property
    def solves_logistic(self) -> bool:
        return "logreg" in self.inputs.classifiers or bool(self.plan.config.mdl)

    def plan_jobs(self) -> list[tuple[Any, ...]]:
        """The layer summaries (the longest jobs) first, then one job per (pooling, layer) (and per baseline
        pooling and layer), then the learning-curve points, all in one pool."""
        reference = str(self.plan.path) if self.source is None else self.source
        inputs, layers = self.inputs, self.layers
        jobs: list[tuple[Any, ...]] = [
            ("mix", reference, pooling, layers, inputs) for pooling in self.poolings if len(layers) > 1
        ]
        jobs += [("probe", reference, layer, pooling, inputs) for pooling in self.poolings for layer in layers]
        if self.plan.config.baseline is not None:  # the same probes on the baseline's features, beside them
            baseline = str(self.plan.config.baseline)
            jobs += [
                ("probe", baseline, layer, pooling, inputs, "baseline") for pooling in self.poolings for layer in layers
            ]
        if self.sizes:
            jobs += [
                ("curve", reference, layer, pooling, inputs, self.sizes)
                for pooling in self.poolings
                for layer in self.curve_at
            ]
        return jobs

    def check_reads(self, jobs: list[tuple[Any, ...]]) -> None:
        """Every word vector the jobs read: a mix job's layers, a probe or curve job's layer, of its pooling."""
        reads: dict[Any, list[tuple[str, int]]] = {}
        for kind, source, *arguments in jobs:
            pairs = (
                [(arguments[0], layer) for layer in arguments[1]] if kind == "mix" else [(arguments[1], arguments[0])]
            )
            reads.setdefault(source, []).extend(pairs)
        require_finite_words(reads, self.plan.allow_partial)

    @staticmethod
    def run_job(*job: Any) -> tuple[str, Any]:
        """A static function, so that a worker is sent the job's arguments only (not the whole task)."""
        kind, *arguments = job
        return kind, WORD_JOBS[kind](*arguments)

    def results_label(self) -> str:
        task = self.inputs.task
        return f"{task.label}.arcs" if task.level is Level.ARC else task.label

    def build_result(self, outputs: list[Any], device: str | None, workers: int) -> ProbeResult:
        inputs = self.inputs
        summaries = dict(output for kind, output in outputs if kind == "mix")
        records = reference_rows(inputs) + [row for kind, output in outputs if kind == "probe" for row in output]
        curve = None
        if self.sizes:
            points = [row for kind, output in outputs if kind == "curve" for row in output]
            curve = pd.DataFrame.from_records(points, columns=CURVE_COLUMNS)
        oof = [record.pop("_predictions", None) for record in records]
        table = pd.DataFrame.from_records(records)
        metric = inputs.scoring.metric
        table = mark_choices(table, metric, ("majority", "lexical"))
        predictions = {index: values for index, values in enumerate(oof) if values is not None}
        n_bootstrap, seed = max(int(self.plan.config.n_bootstrap), 1000), int(self.plan.config.seed)
        test = inputs.scoring.p_value
        table = add_significance(
            table, predictions, inputs.plan, inputs.task.y, n_bootstrap, seed, metric=metric, p_value=test
        )
        table = table[WORD_COLUMNS]
        table["layer"] = table["layer"].astype("Int64")
        rows = self.rows
        frame, predictions_for = prediction_table(
            table, predictions, inputs.task, inputs.plan, rows.ids, rows.forms, rows.offsets
        )
        meta = replace(
            self._meta(summaries, device, workers, predictions_for), **choice_meta(table, metric, predictions_for)
        )
        return ProbeResult(table, meta, notes=list(self.plan.notes), predictions=frame, curve=curve)

    def _meta(self, summaries: dict, device: str | None, workers: int, predictions_for: str) -> ProbeMeta:
        config, task = self.plan.config, self.inputs.task
        counts = np.bincount(task.y, minlength=task.n_classes)
        return ProbeMeta(
            **self.plan.meta_fields(workers),
            file=self.rows.file,
            label_names=task.class_names,
            class_counts={name: int(count) for name, count in zip(task.class_names, counts, strict=False)},
            n_rows=int(len(task.y)),
            n_labelled=int(len(task.y)),
            n_missing_labels=0,
            n_sentences=int(len(np.unique(task.groups))),
            n_words=int(task.n_words),
            cs=list(config.cs),
            balanced=bool(config.balanced),
            mdl=bool(config.mdl),
            control_task=CONTROL_TASKS[task.level],
            layer_summary=summaries,
            baseline_file=str(Path(config.baseline).resolve()) if config.baseline else None,
            baseline_model=self.baseline_model,
            solver=solver_meta(device),
            predictions_for=predictions_for,
            train_sizes=self.sizes,
            rows_sha256=word_rows_sha256(task, self.inputs.plan, self.rows.forms, self.rows.offsets),
        )


def probe_words(
    config: ProbeConfig, path: str | Path, notes: list[str], started: float, source: Any = None
) -> ProbeResult:
    """The word-level probing run of ``config`` on the features file at ``path``, or on an open ``source``
    (an object with the word methods of ``FeatureFile``, as the tests plant)."""
    level = Level.ARC if config.arcs else Level.WORD
    plan = ProbePlan(
        config, Path(path), Task.CLASSIFICATION, level, None, tuple(config.classifier_list()), started, notes
    )
    return run_task(WordProbe.from_plan(plan, source))
