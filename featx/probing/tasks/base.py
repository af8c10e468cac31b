"""``ProbeTask``: what ``featx.probe`` asks of every kind of probing run (classification, regression, word
and arc probes; sentence pairs are a variant of the sentence-level tasks), and what those tasks share.

``featx.probe`` resolves a ``ProbePlan`` and builds the task for it (``api.task_for``); ``run_task`` runs
the task's jobs side by side (``inputs.run_jobs``) and asks the task for the ``ProbeResult``. A task is
built in the main process; a worker gets a job's arguments only (``run_job`` is static).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..plan import ProbePlan
    from ..results import ProbeResult


class ProbeTask(Protocol):
    """One kind of probing run, resolved against its features file."""

    @property
    def plan(self) -> ProbePlan:
        """The run's plan (its options, file, task and level, and its notes)."""
        ...

    @property
    def solves_logistic(self) -> bool:
        """Whether any job solves logistic probes (then ``--device`` chooses where)."""
        ...

    def plan_jobs(self) -> list[tuple[Any, ...]]:
        """The arguments of every job of the run, in the order their outputs are used."""
        ...

    def run_job(self, *job: Any) -> Any:
        """One job of ``plan_jobs`` (in a worker process): its rows of the results table, or what the task
        gathers. Tasks make it a static method, so that a worker is sent the job's arguments only."""
        ...

    def build_result(self, outputs: list[Any], device: str | None, workers: int) -> ProbeResult:
        """The run's table, metadata and side tables from its jobs' outputs (in ``plan_jobs`` order)."""
        ...

    def results_label(self) -> str:
        """The label part of the results files' names (``<features>.<label>.probe.csv``)."""
        ...


def mark_best(table: pd.DataFrame, metric: str, reference_kinds: tuple[str, ...]) -> pd.Series:
    """The best row by ``metric`` of each (features, site, pooling, classifier): among its single layers,
    else among its other specs; reference rows (majority, baselines) are never best."""
    best = pd.Series(False, index=table.index)
    candidates = table[~table.kind.isin(reference_kinds)]
    for _, group in candidates.groupby(["features", "site", "pooling", "classifier"], sort=False):
        singles = group[group.kind == "single"]
        pool = singles if not singles.empty else group
        if pool[metric].notna().any():
            best[pool[metric].idxmax()] = True
    return best


def out_of_fold(n_items: int, folds: list[tuple[np.ndarray, np.ndarray]], results: list, fill: float) -> np.ndarray:
    """Each item's prediction from the fold that tested it (``fill``: never tested, e.g. training rows)."""
    dtype = np.float64 if np.isnan(fill) else np.int32
    predictions = np.full(n_items, fill, dtype=dtype)
    for (_, test), result in zip(folds, results, strict=False):
        predictions[test] = result.predictions
    return predictions


def row_order(table: pd.DataFrame, sites: list[str], classifiers: list[str], poolings: list[str], specs: list[str]):
    """Row order of a sentence-level table: reference rows first, then features, site, classifier, pooling,
    layer spec (each in the order asked)."""
    keys = pd.DataFrame(
        {
            "f": table.features.map({"main": 0, "baseline": 1}),
            "site": table.site.map({name: i for i, name in enumerate(["", *sites])}),
            "c": table.classifier.map({name: i for i, name in enumerate(classifiers)}).fillna(-1),
            "p": table.pooling.map({name: i for i, name in enumerate(["", *poolings])}),
            "s": table.layer_spec.map({name: i for i, name in enumerate(specs)}).fillna(-1),
        }
    )
    return list(keys.sort_values(["f", "site", "c", "p", "s"], kind="stable").index)


def run_task(task: ProbeTask) -> ProbeResult:
    """Run ``task``: plan its jobs, choose where and how many side by side, run them, build the result
    and (unless ``write=False``) write its files."""
    from ..inputs import run_jobs, solver_plan
    from ..results import write_result

    plan = task.plan
    jobs = task.plan_jobs()
    device, workers = solver_plan(plan.config, len(jobs), plan.notes, task.solves_logistic)
    outputs = run_jobs(task.run_job, jobs, workers, device)
    result = task.build_result(outputs, device, workers)
    if plan.config.write:
        write_result(result, plan.path, task.results_label(), plan.config.output)
    return result
