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

    def check_reads(self, jobs: list[tuple[Any, ...]]) -> None:
        """Refuse, before any job runs, a file holding inf or NaN in a matrix ``jobs`` (``plan_jobs``') or the
        run's later jobs (learning curves) will read (``probing.prescan``)."""
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


def mark_best(table: pd.DataFrame, column: str, reference_kinds: tuple[str, ...]) -> pd.Series:
    """The best row by ``column`` of each (features, site, pooling, classifier): among its single layers,
    else among its other specs; reference rows (majority, baselines) are never best."""
    best = pd.Series(False, index=table.index)
    candidates = table[~table.kind.isin(reference_kinds)]
    for _, group in candidates.groupby(["features", "site", "pooling", "classifier"], sort=False):
        singles = group[group.kind == "single"]
        pool = singles if not singles.empty else group
        if pool[column].notna().any():
            best[pool[column].idxmax()] = True
    return best


def mark_choices(table: pd.DataFrame, metric: str, reference_kinds: tuple[str, ...]) -> pd.DataFrame:
    """``is_best``: each group's row chosen on its training parts (by ``selection_score``; the star, and
    what the paired tests compare against); ``is_best_on_test``: the argmax of the test ``metric``, kept
    to show how optimistic choosing on the test rows would have been."""
    table = table.copy()
    table.loc[table.kind.isin(reference_kinds), "selection_score"] = np.nan
    table["is_best"] = mark_best(table, "selection_score", reference_kinds)
    table["is_best_on_test"] = mark_best(table, metric, reference_kinds)
    return table


def _choice(row: pd.Series, metric: str) -> dict[str, Any]:
    layer = row["layer"]
    return {
        "features": row["features"],
        "site": row["site"],
        "layer_spec": row["layer_spec"],
        "layer": None if pd.isna(layer) else int(layer),
        "pooling": row["pooling"],
        "classifier": row["classifier"],
        "selection_score": _number(row["selection_score"]),
        "test_score": _number(row[metric]),
        "test_low": _number(row.get(f"{metric}_low")),
        "test_high": _number(row.get(f"{metric}_high")),
    }


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def predictions_layer(table: pd.DataFrame, predictions_for: str) -> str | None:
    """The layer spec chosen on training rows (``is_best``, by ``selection_score``) among the hidden-state single
    layers of the predictions file's pooling/classifier (``predictions_for``); None without such a row."""
    pooling, _, classifier = predictions_for.partition("/")
    rows = table[(table.features == "main") & (table.kind == "single") & (table.site == "hidden")]
    rows = rows[(rows.pooling == pooling) & (rows.classifier == classifier) & rows.is_best]
    rows = rows[rows.selection_score.notna()]
    return str(rows.layer_spec.iloc[0]) if len(rows) == 1 else None


def choice_meta(table: pd.DataFrame, metric: str, predictions_for: str = "") -> dict[str, Any]:
    """The JSON meta's ``metric``, ``selected`` (the main features' row chosen on training rows over every
    site, pooling and classifier), ``best_on_test`` (the row with the best test score), ``optimism``
    (best-on-test minus selected test score; None when either is missing) and ``predictions_layer`` (the layer
    chosen on training rows among the predictions file's own layers, which ``featx explain`` shows)."""
    main = table[table.features == "main"]
    chosen = main[main.is_best & main.selection_score.notna()]
    on_test = main[main.is_best_on_test & main[metric].notna()]
    selected = _choice(chosen.loc[chosen.selection_score.idxmax()], metric) if not chosen.empty else None
    best = _choice(on_test.loc[on_test[metric].idxmax()], metric) if not on_test.empty else None
    optimism = None
    if selected is not None and best is not None and selected["test_score"] is not None:
        optimism = float(best["test_score"] - selected["test_score"])
    chosen_layer = predictions_layer(table, predictions_for) if predictions_for else None
    return {
        "metric": metric,
        "selected": selected,
        "best_on_test": best,
        "optimism": optimism,
        "predictions_layer": chosen_layer,
    }


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
    """Run ``task``: plan its jobs, choose where and how many side by side, run them (a progress bar of the jobs
    unless ``progress=False``: ``featx probe -q``), build the result and (unless ``write=False``) write its files."""
    from ...progress import progress_bar
    from ..inputs import run_jobs, solver_plan
    from ..results import write_result

    plan = task.plan
    jobs = task.plan_jobs()
    task.check_reads(jobs)  # every matrix the jobs will read, before the first fit
    device, workers = solver_plan(plan.config, len(jobs), plan.notes, task.solves_logistic)
    with progress_bar(total=len(jobs), unit="job", disable=not plan.config.progress, desc="probe") as bar:
        outputs = run_jobs(task.run_job, jobs, workers, device, done=bar.update)
    result = task.build_result(outputs, device, workers)
    if plan.config.write:
        write_result(result, plan.path, task.results_label(), plan.config.output)
    return result
