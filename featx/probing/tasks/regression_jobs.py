"""The jobs of a regression run: ridge (and the MLP head) of one (source, site, layer spec, pooling) fitted
over the outer folds, on the real targets and the control task's, summarised into result rows; the
learning-curve points of one job; and the training-mean reference row."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...selection import LayerSpec
from .. import evaluation as ev
from ..evaluation import regression_metrics as rm
from ..inputs import FeatureJob, load_job_features
from ..meta import Task
from ..solvers import ridge
from .base import out_of_fold

CURVE_COLUMNS = [
    "features",
    "site",
    "label",
    "task",
    "layer_spec",
    "layer",
    "pooling",
    "classifier",
    "train_size",
    "n_train",
    "r2",
    "r2_low",
    "r2_high",
    "spearman",
    "baseline",
    "evaluation",
]
STRATA = 5  # learning curves subsample each training part stratified by quantile bins of its targets


@dataclass(frozen=True)
class RegressionInputs:
    """Everything a regression job needs besides its features; sent to each worker with its job."""

    allow_partial: bool
    kept: np.ndarray
    y: np.ndarray
    y_control: np.ndarray | None
    plan: ev.Plan
    label: str
    alphas: tuple[float, ...]
    seed: int
    n_bootstrap: int
    threads: int
    scoring: ev.Scoring = ev.Scoring("r2")  # the run's metric (--metric): what the best row is chosen in


def fit_folds(classifier: str, data: Any, targets: list[np.ndarray], inputs: RegressionInputs) -> list[list]:
    """Every outer fold for each target vector (the real targets, then the control task's, when asked)."""
    results: list[list] = [[] for _ in targets]
    for index, ((train, test), dev) in enumerate(zip(inputs.plan.folds, inputs.plan.dev, strict=False)):
        seed = inputs.seed + 1000 * index
        if classifier == "ridge":
            fold = ridge.run_ridge(data, targets, train, test, dev, inputs.alphas, seed, inputs.plan.groups)
        else:
            fold = [ridge.run_mlp(data, y, train, test, dev, seed, inputs.plan.groups) for y in targets]
        for per_target, result in zip(results, fold, strict=False):
            per_target.append(result)
    return results


def result_record(job: FeatureJob, classifier: str, row: dict, inputs: RegressionInputs) -> dict:
    """A results-table row of one job and regressor from its summary ``row``."""
    return {
        **job.columns(classifier, inputs.label, Task.REGRESSION.value, inputs.plan.evaluation),
        **{f"control_{metric}": float("nan") for metric in ev.REGRESSION_METRICS},
        "selectivity": float("nan"),
        "selection_score": float("nan"),
        **row,
    }


def run_probe_job(job: FeatureJob, inputs: RegressionInputs) -> list[dict]:
    """The result rows of one job, each with its out-of-fold predictions under ``_predictions``."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=inputs.threads):
        data = load_job_features(job, inputs.kept, inputs.allow_partial)
        targets = [inputs.y] if inputs.y_control is None else [inputs.y, inputs.y_control]
        records = []
        for classifier in job.classifiers:
            folds, *control = fit_folds(classifier, data, targets, inputs)
            row = rm.summarise(inputs.plan, inputs.y, folds, inputs.n_bootstrap, inputs.seed)
            row["selection_score"] = inputs.scoring.selection(inputs.y, folds)
            record = result_record(job, classifier, row, inputs)
            if control and inputs.y_control is not None:
                metric = inputs.scoring.metric
                for name in ev.REGRESSION_METRICS:
                    record[f"control_{name}"] = ev.Scoring(name).over_folds(inputs.y_control, inputs.plan, control[0])
                record["selectivity"] = record[metric] - record[f"control_{metric}"]
            record["_predictions"] = out_of_fold(len(inputs.y), inputs.plan.folds, folds, float("nan"))
            records.append(record)
    return records


def training_strata(y: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Every row's quantile bin of the target (``STRATA`` bins), the edges drawn from the training part ``train``
    alone: what a learning curve subsamples that part by (the test rows' targets never move an edge)."""
    edges = np.quantile(y[train], np.linspace(0, 1, STRATA + 1)[1:-1])
    return np.searchsorted(edges, y, side="right")


def run_curve_job(job: FeatureJob, inputs: RegressionInputs, sizes: list[float]) -> list[dict]:
    """Learning-curve points of one job: the same outer folds, each training part subsampled (stratified
    by quantile bins of its own targets, ``training_strata``), the test part unchanged."""
    from threadpoolctl import threadpool_limits

    from ..analyses.curve_baselines import curve_baseline
    from ..analyses.curves import subsampled_plan

    records = []
    with threadpool_limits(limits=inputs.threads):
        data = load_job_features(job, inputs.kept, inputs.allow_partial)
        for size in sizes:
            plan = subsampled_plan(inputs.plan, inputs.y, size, inputs.seed, training_strata)
            baseline = curve_baseline(plan, inputs.y)  # the training mean's R² on the same rows
            for classifier in job.classifiers:
                folds = fit_folds(classifier, data, [inputs.y], replace(inputs, plan=plan))[0]
                row = rm.summarise(plan, inputs.y, folds, min(inputs.n_bootstrap, 200), inputs.seed)
                records.append(
                    {
                        "features": job.features,
                        "site": job.site,
                        "label": inputs.label,
                        "task": Task.REGRESSION.value,
                        "layer_spec": job.spec.name,
                        "layer": job.spec.layers[0] if job.spec.kind == "single" else None,
                        "pooling": job.pooling,
                        "classifier": classifier,
                        "train_size": size,
                        "evaluation": plan.evaluation,
                        "baseline": baseline,
                        **{key: row[key] for key in CURVE_COLUMNS if key in row},
                    }
                )
    return records


def mean_record(inputs: RegressionInputs) -> dict:
    """The reference row: the training part's mean target as every prediction."""
    folds = [ridge.run_mean(inputs.y, train, test) for train, test in inputs.plan.folds]
    row = rm.summarise(inputs.plan, inputs.y, folds, inputs.n_bootstrap, inputs.seed)
    record = result_record(FeatureJob("main", "", LayerSpec("mean", ()), "", ["mean"]), "mean", row, inputs)
    record.update(site="", layer_spec="train mean", kind="baseline", layers="")
    return record
