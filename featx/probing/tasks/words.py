"""``featx probe`` on word-level labels: one probe per layer and word pooling, folds by sentence.

``featx probe feats.h5 --label upos`` (a word label column), ``--label deprel --arcs`` (the relation of each
(head, dependent) pair from ``[h_head, h_dep, h_head * h_dep]``) and ``--label head --arcs`` (arc or not,
balanced negatives within the sentence). Beside the probes: the majority class, the most frequent label of
each word type (fitted on the training part), the word-type control task (Hewitt & Liang 2019) and the
Tenney layer summaries (scalar mix, expected layer). Features stream from the file one layer at a time.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import InputError
from ...selection import parse_layer_specs, parse_poolings
from ...store import schema
from .. import evaluation as ev
from ..analyses.curves import parse_train_sizes
from ..analyses.word_curves import curve_job, curve_layers
from ..config import ProbeConfig
from ..evaluation.significance import add_significance
from ..inputs import ProbeResult, _versions, run_jobs, solver_plan, write_result
from ..results import COLUMNS, CURVE_COLUMNS
from ..solvers.devices import solver_meta
from .word_eval import item_features, run_fold, summarise
from .word_items import (
    HEAD_LABEL,
    LEVEL_ARC,
    WordPlan,
    WordTask,
    attachment_task,
    control_labels,
    lexical_predictions,
    opened_source,
    relation_task,
    sentence_plan,
    word_task,
)
from .word_predictions import prediction_table

WORD_CLASSIFIERS = ("logreg", "svm", "mlp")
WORD_COLUMNS = COLUMNS + ["level"]


def wants_words(features, config: ProbeConfig) -> bool:
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
        raise InputError("--label head is probed as arcs", "add --arcs: featx probe FEATURES --label head --arcs")
    return has_words and config.label in features.word_label_columns()


def build_task(source, config: ProbeConfig, notes: list[str] | None = None) -> WordTask:
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
        return attachment_task(source, int(config.seed)) if label == HEAD_LABEL else relation_task(source, label)
    return word_task(source, label)


@dataclass
class _Shared:
    task: WordTask
    plan: WordPlan
    y_control: np.ndarray | None
    classifiers: list[str]
    cs: tuple[float, ...]
    balanced: bool
    seed: int
    n_bootstrap: int
    mdl: bool = False


def _online_code(shared: _Shared, X: np.ndarray):
    """The MDL online code of the labels given one layer's items, sent sentence by sentence (the
    training part, dev included, of a split; every item under cross-validation)."""
    from ..analyses.mdl import coded_rows, online_codelength

    return online_codelength(
        X,
        shared.task.y,
        shared.task.n_classes,
        coded_rows(shared.plan),
        shared.seed,
        shared.cs,
        groups=shared.task.groups,
    )


def _run_job(source, layer: int, pooling: str, shared: _Shared) -> list[dict]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1), opened_source(source) as opened:
        X = item_features(shared.task, opened.word_features(pooling, layer, dtype=np.float32))
    labels = [shared.task.y] + ([shared.y_control] if shared.y_control is not None else [])
    records = []
    with threadpool_limits(limits=1):
        code = _online_code(shared, X) if shared.mdl else None
        for classifier in shared.classifiers:
            per_label = [[] for _ in labels]
            for index, ((train, test), dev) in enumerate(zip(shared.plan.folds, shared.plan.dev, strict=False)):
                fold = run_fold(
                    classifier,
                    X,
                    labels,
                    train,
                    test,
                    dev,
                    shared.plan.groups,
                    shared.task.n_classes,
                    shared.cs,
                    shared.balanced,
                    shared.seed + 1000 * index,
                )
                for results, result in zip(per_label, fold, strict=False):
                    results.append(result)
            row = summarise(
                shared.plan, shared.task.y, per_label[0], shared.task.n_classes, shared.n_bootstrap, shared.seed
            )
            if shared.y_control is not None:
                row["control_accuracy"] = float(
                    np.mean(
                        [
                            np.mean(r.predictions == shared.y_control[test])
                            for (_, test), r in zip(shared.plan.folds, per_label[1], strict=False)
                        ]
                    )
                )
                row["selectivity"] = row["accuracy"] - row["control_accuracy"]
            record = _record(shared, "single", str(layer), layer, pooling, classifier, row)
            if code is not None:
                record["mdl_bits"], record["mdl_compression"] = code.bits, code.compression
            record["_predictions"] = _out_of_fold(shared, per_label[0])
            records.append(record)
    return records


def _out_of_fold(shared: _Shared, folds: list[ev.FoldResult]) -> np.ndarray:
    predictions = np.full(len(shared.task.y), -1, dtype=np.int32)
    for (_, test), result in zip(shared.plan.folds, folds, strict=False):
        predictions[test] = result.predictions
    return predictions


def _record(shared: _Shared, kind: str, spec: str, layer, pooling: str, classifier: str, row: dict) -> dict:
    per_class = row.pop("per_class_f1")
    row.pop("layer_weights", None)
    return {
        "features": "main",
        "site": "hidden" if kind == "single" else "",
        "label": shared.task.label,
        "task": "classification",
        "layer_spec": spec,
        "kind": kind,
        "layer": layer,
        "layers": "" if layer is None else str(layer),
        "pooling": pooling,
        "classifier": classifier,
        "evaluation": shared.plan.evaluation,
        "control_accuracy": float("nan"),
        "selectivity": float("nan"),
        "mdl_bits": float("nan"),
        "mdl_compression": float("nan"),
        "C": float("nan"),
        **row,
        "per_class_f1": json.dumps(
            {
                name: (None if not np.isfinite(value) else round(float(value), 6))
                for name, value in zip(shared.task.class_names, per_class, strict=False)
            }
        ),
        "layer_weights": "",
        "level": shared.task.level,
    }


def _reference_rows(shared: _Shared) -> list[dict]:
    """The majority class and the most frequent label per word type (both fitted on each training part)."""
    rows = []
    for kind, predict in (
        (
            "majority",
            lambda train, test: ev.run_majority(shared.task.y, train, test, shared.task.n_classes).predictions,
        ),
        ("lexical", lambda train, test: lexical_predictions(shared.task, train, test)),
    ):
        folds = [ev.FoldResult(predict(train, test)) for train, test in shared.plan.folds]
        row = summarise(shared.plan, shared.task.y, folds, shared.task.n_classes, shared.n_bootstrap, shared.seed)
        rows.append(_record(shared, kind, kind, None, "", kind, row))
    return rows


def _dispatch(kind: str, function, arguments: tuple) -> tuple[str, object]:
    return kind, function(*arguments)


def _mix_job(source, pooling: str, layers: list[int], shared: _Shared) -> tuple[str, dict]:
    import torch
    from threadpoolctl import threadpool_limits

    from ..analyses.scalar_mix import layer_summary, load_mix_data

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1), opened_source(source) as opened:
            data = load_mix_data(opened, shared.task, shared.plan, pooling, layers, shared.seed)
            return pooling, layer_summary(data, shared.task.n_classes, shared.seed)
    finally:
        torch.set_num_threads(threads)


def _mark_best(table: pd.DataFrame) -> pd.Series:
    best = pd.Series(False, index=table.index)
    singles = table[table.kind == "single"]
    for _, group in singles.groupby(["pooling", "classifier"], sort=False):
        best[group.accuracy.idxmax()] = True
    return best


def _layers(source, config: ProbeConfig) -> list[int]:
    specs = parse_layer_specs(config.layers, source.layers)
    if any(spec.kind != "single" for spec in specs):
        raise InputError(
            "word-level probes take single layers (all, 0,3,6, -4:)",
            "cat()/stack are not available for words; the scalar-mix summary combines the layers",
        )
    return sorted({spec.layers[0] for spec in specs})


def _check_classifiers(config: ProbeConfig) -> list[str]:
    chosen = config.classifier_list()
    other = [name for name in chosen if name not in WORD_CLASSIFIERS]
    if other:
        raise InputError(
            f"classifier {', '.join(other)} is not available for word-level probes",
            f"choose from {', '.join(WORD_CLASSIFIERS)}",
        )
    if config.baseline is not None or config.labels is not None:
        raise InputError(
            "--baseline and --labels are not available for word-level probes yet",
            "leave them out; word probes report the control task, majority and lexical baselines",
        )
    return chosen


def probe_words(config: ProbeConfig, path: Path, notes: list[str], started: float, source=None) -> ProbeResult:
    """The word-level probing run of ``config`` on the features file at ``path`` (or an open ``source``)."""
    classifiers = _check_classifiers(config)
    with opened_source(path if source is None else source) as opened:
        if not getattr(opened, "has_words", False):
            raise InputError(f"{path} has no word-level data", "extract a treebank: featx extract treebank.conllu")
        task = build_task(opened, config, notes)
        layers = _layers(opened, config)
        poolings = parse_poolings(config.poolings, opened.word_poolings())
        plan = sentence_plan(task, opened.split, int(config.folds), int(config.seed), notes)
        sizes = parse_train_sizes(config.train_sizes) if config.train_sizes is not None else None
        curve_at = curve_layers(opened, config, layers) if sizes else []
        attrs = getattr(opened, "attrs", {})
        ids, forms, offsets = list(opened.ids), opened.word_forms(), np.asarray(opened.word_offsets(), np.int64)
        meta_file = {
            key: attrs.get(key) for key in (schema.MODEL, schema.MODEL_SHA256, schema.CORPUS_PATH, schema.CORPUS_SHA256)
        }
    training = plan.folds[0][0] if plan.is_split else np.arange(len(task.y))
    y_control = control_labels(task, training, int(config.seed)) if config.control else None
    shared = _Shared(
        task,
        plan,
        y_control,
        classifiers,
        tuple(float(c) for c in config.cs),
        bool(config.balanced),
        int(config.seed),
        int(config.n_bootstrap),
        bool(config.mdl),
    )
    reference = str(path) if source is None else source
    # The layer summaries (the longest jobs) first, then one job per (pooling, layer), all in one pool.
    jobs = [("mix", _mix_job, (reference, pooling, layers, shared)) for pooling in poolings if len(layers) > 1]
    jobs += [("probe", _run_job, (reference, layer, pooling, shared)) for pooling in poolings for layer in layers]
    jobs += (
        [("curve", curve_job, (reference, layer, pooling, shared, sizes)) for pooling in poolings for layer in curve_at]
        if sizes
        else []
    )
    device, workers = solver_plan(config, len(jobs), notes, "logreg" in classifiers or bool(config.mdl))
    outputs = run_jobs(_dispatch, jobs, workers, device)
    summaries = dict(output for kind, output in outputs if kind == "mix")
    records = _reference_rows(shared) + [record for kind, output in outputs if kind == "probe" for record in output]
    curve = (
        pd.DataFrame.from_records(
            [record for kind, output in outputs if kind == "curve" for record in output], columns=CURVE_COLUMNS
        )
        if sizes
        else None
    )
    oof = [record.pop("_predictions", None) for record in records]
    table = pd.DataFrame.from_records(records)
    table["is_best"] = _mark_best(table)
    predictions = {index: values for index, values in enumerate(oof) if values is not None}
    table = add_significance(table, predictions, plan, task.y, max(int(config.n_bootstrap), 1000), int(config.seed))
    table = table[WORD_COLUMNS]
    table["layer"] = table["layer"].astype("Int64")
    frame, predictions_for = prediction_table(table, predictions, task, plan, ids, forms, offsets)
    meta = _meta(config, path, meta_file, task, plan, classifiers, poolings, layers, summaries, workers, notes, started)
    meta.update(solver_meta(device), predictions_for=predictions_for, train_sizes=sizes)
    result = ProbeResult(table, meta, notes=list(notes), predictions=frame, curve=curve)
    if config.write:
        write_result(result, Path(path), _results_label(task), config.output)
    return result


def _results_label(task: WordTask) -> str:
    return f"{task.label}.arcs" if task.level == LEVEL_ARC else task.label


def _meta(
    config,
    path,
    meta_file,
    task: WordTask,
    plan: WordPlan,
    classifiers,
    poolings,
    layers,
    summaries,
    workers,
    notes,
    started,
) -> dict:
    counts = np.bincount(task.y, minlength=task.n_classes)
    return {
        "features_file": str(Path(path).resolve()),
        **meta_file,
        "label": task.label,
        "level": task.level,
        "label_names": task.class_names,
        "class_counts": {name: int(count) for name, count in zip(task.class_names, counts, strict=False)},
        "n_rows": int(len(task.y)),
        "n_labelled": int(len(task.y)),
        "n_missing_labels": 0,
        "n_sentences": int(len(np.unique(task.groups))),
        "n_words": int(task.n_words),
        "evaluation": plan.evaluation,
        "folds": int(config.folds) if not plan.is_split else None,
        "n_dev": int(len(plan.dev[0])) if plan.is_split and plan.dev[0] is not None else 0,
        "seed": int(config.seed),
        "classifiers": classifiers,
        "poolings": poolings,
        "sites": ["hidden"],
        "layer_specs": [str(layer) for layer in layers],
        "cs": list(config.cs),
        "balanced": bool(config.balanced),
        "control": bool(config.control),
        "mdl": bool(config.mdl),
        "control_task": "word type (lower-cased form) -> one fixed random label from the training label distribution"
        if task.level != LEVEL_ARC
        else "dependent's word type (deprel) or the pair of types (head) -> one fixed "
        "random label from the training label distribution",
        "layer_summary": summaries,
        "jobs": workers,
        "seconds": round(time.perf_counter() - started, 3),
        **{f"{k}_version": v for k, v in _versions().items()},
        "notes": list(notes),
    }
