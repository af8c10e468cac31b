"""The jobs of a sentence-level classification run: every classifier of one (source, site, layer spec,
pooling) fitted over the outer folds, on the real labels and on the control task's, summarised into
result rows; and the learning-curve points of one job."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...selection import LayerSpec
from .. import evaluation as ev
from ..inputs import TOKENS_POOLING, FeatureJob, load_job_features
from ..meta import Task
from ..solvers import classifiers as clf
from .base import out_of_fold


@dataclass(frozen=True)
class ClassificationInputs:
    """Everything a classification job needs besides its features; sent to each worker with its job."""

    allow_partial: bool
    kept: np.ndarray
    y: np.ndarray
    y_control: np.ndarray | None
    plan: ev.Plan
    n_classes: int
    label: str
    class_names: list[str]
    cs: tuple[float, ...]
    balanced: bool
    seed: int
    n_bootstrap: int
    threads: int
    mdl: bool = False
    scoring: ev.Scoring = ev.Scoring()  # the run's metric (--metric): what the best row is chosen in


def fit_folds(
    classifier: str, kind: str, data: Any, labels: list[np.ndarray], inputs: ClassificationInputs
) -> list[list[ev.FoldResult]]:
    """Every outer fold for each label vector (the real labels, then the control task's, when asked);
    single and concatenated logreg probes fit all vectors of a fold in one batched solve."""
    results: list[list[ev.FoldResult]] = [[] for _ in labels]
    for index, ((train, test), dev) in enumerate(zip(inputs.plan.folds, inputs.plan.dev, strict=False)):
        seed = inputs.seed + 1000 * index
        if kind != "stack" and classifier in clf.LINEAR:
            fold = ev.run_linear_tasks(
                classifier,
                data,
                labels,
                train,
                test,
                dev,
                inputs.n_classes,
                inputs.cs,
                inputs.balanced,
                seed,
                inputs.plan.groups,
            )
        else:
            fold = [fit_fold(classifier, data, y, train, test, dev, inputs, seed) for y in labels]
        for per_vector, result in zip(results, fold, strict=False):
            per_vector.append(result)
    return results


def fit_fold(
    classifier: str,
    data: Any,
    y: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    dev: np.ndarray | None,
    inputs: ClassificationInputs,
    seed: int,
) -> ev.FoldResult:
    """One fold of a non-linear (mlp, attn) or stacked probe (held-out parts by whole group, when grouped)."""
    n_classes, balanced, groups = inputs.n_classes, inputs.balanced, inputs.plan.groups
    if classifier == "attn":
        return ev.run_attention(data, y, train, test, dev, n_classes, balanced, seed, groups)
    if classifier == "mlp":
        return ev.run_mlp(data, y, train, test, dev, n_classes, balanced, seed, groups)
    return ev.run_stack(classifier, data, y, train, test, dev, n_classes, inputs.cs, balanced, seed, groups)


def run_probe_job(job: FeatureJob, inputs: ClassificationInputs) -> list[dict]:
    """The result rows of one job, each with its out-of-fold predictions under ``_predictions``."""
    from threadpoolctl import threadpool_limits

    uses_torch = any(name in clf.TORCH for name in job.classifiers)  # torch is slow to import: only when used
    with threadpool_limits(limits=inputs.threads), torch_threads(inputs.threads, uses_torch):
        # Imported before any timing, so a worker's first fit_seconds does not include import time.
        import sklearn.linear_model  # noqa: F401
        import sklearn.svm  # noqa: F401

        data = load_job_features(job, inputs.kept, inputs.allow_partial)
        code = online_code(job, data, inputs) if inputs.mdl else None
        return [classifier_record(job, classifier, data, code, inputs) for classifier in job.classifiers]


@contextmanager
def torch_threads(threads: int, wanted: bool) -> Iterator[None]:
    """torch limited to ``threads`` threads inside (when ``wanted``: only then is torch imported)."""
    if not wanted:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def classifier_record(job: FeatureJob, classifier: str, data: Any, code: Any, inputs: ClassificationInputs) -> dict:
    """One classifier's result row of a job (with its control task and MDL code when asked)."""
    labels = [inputs.y] if inputs.y_control is None else [inputs.y, inputs.y_control]
    folds, *control = fit_folds(classifier, job.spec.kind, data, labels, inputs)
    row = ev.summarise(inputs.plan, inputs.y, folds, inputs.n_classes, inputs.n_bootstrap, inputs.seed)
    row.update(mdl_columns(code))
    row["selection_score"] = inputs.scoring.selection(inputs.y, folds)
    if control:
        row.update(control_scores(inputs.y_control, inputs.plan, control[0], inputs.n_classes))
        metric = inputs.scoring.metric
        row["selectivity"] = row[metric] - row[f"control_{metric}"]
    record = result_record(job, classifier, row, inputs)
    record["_predictions"] = out_of_fold(len(inputs.y), inputs.plan.folds, folds, -1)
    return record


def online_code(job: FeatureJob, data: Any, inputs: ClassificationInputs) -> list | None:
    """The MDL online codes of this job's features (pooled single/cat specs only; stack and tokens: none): of
    the real labels, and of the control task's when it runs, sent in the same blocks."""
    from ..analyses.mdl import coded_rows, online_codelengths

    if job.pooling == TOKENS_POOLING or job.spec.kind == "stack":
        return None
    plan = inputs.plan
    labels = [inputs.y] if inputs.y_control is None else [inputs.y, inputs.y_control]
    return online_codelengths(
        data, labels, inputs.n_classes, coded_rows(plan), inputs.seed, inputs.cs, groups=plan.groups
    )


MDL_COLUMNS = ("mdl_bits", "mdl_compression", "control_mdl_bits", "control_mdl_compression", "mdl_selectivity")


def mdl_columns(codes: list | None) -> dict[str, float]:
    """The MDL columns of a result row from ``online_code``'s codes (None: NaN in every one): the real labels'
    codelength and compression, the control task's (NaN without it), and ``mdl_selectivity``, the bits the real
    labels save over the control task's (control_mdl_bits - mdl_bits)."""
    values = dict.fromkeys(MDL_COLUMNS, float("nan"))
    if codes:
        values.update(mdl_bits=codes[0].bits, mdl_compression=codes[0].compression)
    if codes and len(codes) > 1:
        control = codes[1]
        values.update(control_mdl_bits=control.bits, control_mdl_compression=control.compression)
        values["mdl_selectivity"] = control.bits - codes[0].bits
    return values


def run_curve_job(job: FeatureJob, inputs: ClassificationInputs, sizes: list[float]) -> list[dict]:
    """Learning-curve points of one job: the same outer folds, each training part subsampled."""
    from threadpoolctl import threadpool_limits

    from ..analyses.curve_baselines import curve_baseline
    from ..analyses.curves import subsampled_plan

    records = []
    with threadpool_limits(limits=inputs.threads):
        data = load_job_features(job, inputs.kept, inputs.allow_partial)
        for size in sizes:
            plan = subsampled_plan(inputs.plan, inputs.y, size, inputs.seed)
            baseline = curve_baseline(plan, inputs.y, inputs.n_classes)  # the majority class on the same rows
            sub = replace(inputs, plan=plan)
            for classifier in job.classifiers:
                folds = fit_folds(classifier, job.spec.kind, data, [inputs.y], sub)[0]
                row = ev.summarise(plan, inputs.y, folds, inputs.n_classes, min(inputs.n_bootstrap, 200), inputs.seed)
                records.append(
                    {
                        "features": job.features,
                        "site": job.site,
                        "label": inputs.label,
                        "layer_spec": job.spec.name,
                        "layer": job.spec.layers[0] if job.spec.kind == "single" else None,
                        "pooling": job.pooling,
                        "classifier": classifier,
                        "train_size": size,
                        **{key: row[key] for key in ("n_train", "accuracy", "accuracy_low", "accuracy_high")},
                        "macro_f1": row["macro_f1"],
                        "baseline": baseline,
                        "evaluation": plan.evaluation,
                    }
                )
    return records


CONTROL_METRICS = ("accuracy", "macro_f1", "balanced_accuracy")


def control_scores(y_control, plan, folds: list[ev.FoldResult], n_classes: int) -> dict[str, float]:
    """The control task's ``control_<metric>`` columns, each the mean over the outer folds (the one test
    part of a split), as ``summarise`` reports a k-fold run's metrics."""
    return {
        f"control_{metric}": ev.Scoring(metric, n_classes).over_folds(y_control, plan, folds)
        for metric in CONTROL_METRICS
    }


def result_record(job: FeatureJob, classifier: str, row: dict, inputs: ClassificationInputs) -> dict:
    """A results-table row of one job and classifier from its summary ``row``."""
    per_class = row.pop("per_class_f1")
    weights = row.pop("layer_weights")
    return {
        **job.columns(classifier, inputs.label, Task.CLASSIFICATION.value, inputs.plan.evaluation),
        **{f"control_{metric}": float("nan") for metric in CONTROL_METRICS},
        "selectivity": float("nan"),
        "selection_score": float("nan"),
        **mdl_columns(None),
        **row,
        "per_class_f1": json.dumps(
            {
                name: (None if not np.isfinite(value) else round(float(value), 6))
                for name, value in zip(inputs.class_names, per_class, strict=False)
            }
        ),
        "layer_weights": json.dumps(
            {str(layer): round(float(w), 6) for layer, w in zip(job.spec.layers, weights, strict=False)}
        )
        if weights is not None
        else "",
    }


def majority_record(inputs: ClassificationInputs) -> dict:
    """The majority-class reference row (fitted on each training part)."""
    folds = [ev.run_majority(inputs.y, train, test, inputs.n_classes) for train, test in inputs.plan.folds]
    row = ev.summarise(inputs.plan, inputs.y, folds, inputs.n_classes, inputs.n_bootstrap, inputs.seed)
    job = FeatureJob("main", "", LayerSpec("majority", ()), "", ["majority"])
    record = result_record(job, "majority", row, inputs)
    record.update(site="", layer_spec="majority", kind="majority", layers="", C=float("nan"))
    return record
