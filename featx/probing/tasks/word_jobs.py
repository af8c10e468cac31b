"""The jobs of a word-level run: the probes of one (layer, word pooling) over the folds by sentence, on the
real labels and the word-type control task's; the reference rows (majority class, most frequent label per
word type); and the layer summary (scalar mix) of one pooling."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import evaluation as ev
from ..meta import Task
from .base import out_of_fold
from .classification_jobs import CONTROL_METRICS, control_scores, mdl_columns
from .word_eval import item_features, run_fold
from .word_items import WordPlan, WordTask, lexical_predictions, opened_source


@dataclass(frozen=True)
class WordInputs:
    """Everything a word-level job needs besides its features; sent to each worker with its job."""

    task: WordTask
    plan: WordPlan
    y_control: np.ndarray | None
    classifiers: list[str]
    cs: tuple[float, ...]
    balanced: bool
    seed: int
    n_bootstrap: int
    mdl: bool = False
    allow_partial: bool = False  # an unfinished features file: its committed rows (the task's words are among them)
    scoring: ev.Scoring = ev.Scoring()  # the run's metric (--metric): what the best row is chosen in


def online_code(inputs: WordInputs, X: np.ndarray) -> list:
    """The MDL online codes of the labels given one layer's items, and of the word-type control task's when it
    runs, sent sentence by sentence in the same blocks (the training part, dev included, of a split; every item
    under cross-validation)."""
    from ..analyses.mdl import coded_rows, online_codelengths

    task = inputs.task
    labels = [task.y] + ([inputs.y_control] if inputs.y_control is not None else [])
    return online_codelengths(
        X, labels, task.n_classes, coded_rows(inputs.plan), inputs.seed, inputs.cs, groups=task.groups
    )


def fit_folds(classifier: str, X: np.ndarray, labels: list[np.ndarray], inputs: WordInputs) -> list[list]:
    """Every outer fold (by sentence) for each label vector (the real labels, then the control task's)."""
    plan = inputs.plan
    per_label: list[list] = [[] for _ in labels]
    for index, ((train, test), dev) in enumerate(zip(plan.folds, plan.dev, strict=False)):
        parts = (train, test, dev, plan.groups, inputs.task.n_classes, inputs.cs, inputs.balanced)
        fold = run_fold(classifier, X, labels, *parts, inputs.seed + 1000 * index)
        for results, result in zip(per_label, fold, strict=False):
            results.append(result)
    return per_label


def run_probe_job(source: Any, layer: int, pooling: str, inputs: WordInputs, features: str = "main") -> list[dict]:
    """The result rows of one layer and pooling, each with its out-of-fold predictions under ``_predictions``;
    ``features``: ``main``, or ``baseline`` for the ``--baseline`` file's."""
    from threadpoolctl import threadpool_limits

    task, plan = inputs.task, inputs.plan
    with threadpool_limits(limits=1), opened_source(source, inputs.allow_partial) as opened:
        X = item_features(task, opened.word_features(pooling, layer, dtype=np.float32))
    labels = [task.y] + ([inputs.y_control] if inputs.y_control is not None else [])
    records = []
    with threadpool_limits(limits=1):
        code = online_code(inputs, X) if inputs.mdl else None
        for classifier in inputs.classifiers:
            per_label = fit_folds(classifier, X, labels, inputs)
            row = ev.summarise(plan, task.y, per_label[0], task.n_classes, inputs.n_bootstrap, inputs.seed)
            row["selection_score"] = inputs.scoring.selection(task.y, per_label[0])
            if inputs.y_control is not None:
                row.update(control_scores(inputs.y_control, plan, per_label[1], task.n_classes))
                metric = inputs.scoring.metric
                row["selectivity"] = row[metric] - row[f"control_{metric}"]
            record = result_record(inputs, "single", str(layer), layer, pooling, classifier, row, features)
            if code is not None:
                record.update(mdl_columns(code))
            record["_predictions"] = out_of_fold(len(task.y), plan.folds, per_label[0], -1)
            records.append(record)
    return records


def result_record(
    inputs: WordInputs,
    kind: str,
    spec: str,
    layer: int | None,
    pooling: str,
    classifier: str,
    row: dict,
    features: str = "main",
) -> dict:
    """A results-table row (with its ``level`` column) from a summary ``row``."""
    per_class = row.pop("per_class_f1")
    row.pop("layer_weights", None)
    return {
        "features": features,
        "site": "hidden" if kind == "single" else "",
        "label": inputs.task.label,
        "task": Task.CLASSIFICATION.value,
        "layer_spec": spec,
        "kind": kind,
        "layer": layer,
        "layers": "" if layer is None else str(layer),
        "pooling": pooling,
        "classifier": classifier,
        "evaluation": inputs.plan.evaluation,
        **{f"control_{metric}": float("nan") for metric in CONTROL_METRICS},
        "selectivity": float("nan"),
        "selection_score": float("nan"),
        **mdl_columns(None),
        "C": float("nan"),
        **row,
        "per_class_f1": json.dumps(
            {
                name: (None if not np.isfinite(value) else round(float(value), 6))
                for name, value in zip(inputs.task.class_names, per_class, strict=False)
            }
        ),
        "layer_weights": "",
        "level": inputs.task.level,
    }


def reference_rows(inputs: WordInputs) -> list[dict]:
    """The majority class and the most frequent label per word type (both fitted on each training part)."""
    task, plan = inputs.task, inputs.plan

    def majority(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return ev.run_majority(task.y, train, test, task.n_classes).predictions

    def lexical(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return lexical_predictions(task, train, test)

    rows = []
    for kind, predict in (("majority", majority), ("lexical", lexical)):
        folds = [ev.FoldResult(predict(train, test)) for train, test in plan.folds]
        row = ev.summarise(plan, task.y, folds, task.n_classes, inputs.n_bootstrap, inputs.seed)
        rows.append(result_record(inputs, kind, kind, None, "", kind, row))
    return rows


def mix_job(source: Any, pooling: str, layers: list[int], inputs: WordInputs) -> tuple[str, dict]:
    """The layer summary (scalar mix, expected layer) of one pooling over ``layers``."""
    import torch
    from threadpoolctl import threadpool_limits

    from ..analyses.scalar_mix import layer_summary, load_mix_data

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1), opened_source(source, inputs.allow_partial) as opened:
            data = load_mix_data(opened, inputs.task, inputs.plan, pooling, layers, inputs.seed)
            return pooling, layer_summary(data, inputs.task.n_classes, inputs.seed)
    finally:
        torch.set_num_threads(threads)
