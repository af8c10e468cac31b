"""``featx erase``: remove a label linearly from stored features, check it is gone, see what else went.

Per (layer, pooling): the eraser (``erasure.py``) is fitted inside every training part of the
evaluation plan and the logreg probe is trained and scored before and after, so "after" never sees a
test row while fitting (eraser, scaler or C). The written file's eraser is fitted on the training
rows (the train split; every labelled row under cross-validation) and applied to every row.
Amnesic probing: the same before/after for each other label column, its eraser fitted on that
column's training parts (with the erased label's values), with paired tests, Holm-adjusted per label,
and a control (Elazar et al. 2021): the accuracy after removing as many random directions instead; the erased
label's own table has the same control (``random_after``), so a drop that rank alone explains shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...options import keywords_of, spoken_value
from ...safe_files import check_writable, writing
from ...selection import parse_layer_specs, parse_poolings
from .. import evaluation as ev
from ..config import DEFAULT_CS
from ..evaluation.significance import ALPHA, holm, paired_p_value
from ..inputs import open_complete
from ..prescan import require_finite_blocks
from ..tasks.pairs import refuse_separate_pairs
from .erase_config import EraseConfig
from .erasure import Eraser, fit_eraser, moved, random_eraser, save_erasers
from .target import Task, load_task

MAIN_COLUMNS = [
    "label",
    "method",
    "pooling",
    "layer",
    "rank",
    "iterations",
    "majority",
    "before",
    "before_low",
    "before_high",
    "after",
    "after_low",
    "after_high",
    "random_after",
    "random_after_low",
    "random_after_high",
    "at_chance",
    "p",
    "p_holm",
    "moved",
]
AMNESIC_COLUMNS = [
    "label",
    "erased",
    "pooling",
    "layer",
    "majority",
    "before",
    "before_low",
    "before_high",
    "after",
    "after_low",
    "after_high",
    "change",
    "p",
    "p_holm",
    "significant",
    "random_after",
    "random_after_low",
    "random_after_high",
]


@dataclass
class EraseResult:
    table: pd.DataFrame  # the erased label before/after, per pooling and layer
    amnesic: pd.DataFrame  # other label columns before/after
    meta: dict
    output: Path | None = None
    csv_path: Path | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class _Job:
    path: str
    layer: int
    pooling: str
    main: Task
    others: list[Task]
    l_codes: np.ndarray  # the erased label's class codes (main task's numbering) per file row, -1 missing
    config: EraseConfig
    g_codes: np.ndarray | None = None  # --group: the group code (main task's numbering) per file row, -1 missing


def _summary(task: Task, folds: list[ev.FoldResult], n_boot: int, seed: int) -> tuple[float, float, float]:
    row = ev.summarise(task.plan, task.y, folds, task.n_classes, n_boot, seed)
    return row["accuracy"], row["accuracy_low"], row["accuracy_high"]


def _oof(task: Task, folds: list[ev.FoldResult]) -> np.ndarray:
    out = np.full(len(task.y), -1)
    for (_, test), result in zip(task.plan.folds, folds, strict=False):
        out[test] = result.predictions
    return out


def _before_after(
    job: _Job, task: Task, X: np.ndarray, codes: np.ndarray, n_codes: int, cache: dict, random_control: bool = False
):
    """Fold results of the logreg probe of ``task`` before and after erasing ``codes`` (the erased
    label's codes of task's rows) with an eraser fitted on each fold's training rows that have one;
    with ``random_control``, also after removing as many random directions (the amnesic control)."""
    before: list[ev.FoldResult] = []
    after: list[ev.FoldResult] = []
    control: list[ev.FoldResult] = []
    groups = task.plan.groups  # --group: the probes' holdouts that choose C take whole groups
    for index, ((train, test), dev) in enumerate(zip(task.plan.folds, task.plan.dev, strict=False)):
        seed = job.config.seed + 1000 * index
        fit_rows = train[codes[train] >= 0]
        eraser = _eraser(job, task.kept[fit_rows], X[fit_rows], codes[fit_rows], n_codes, cache)
        versions = [(before, X), (after, eraser(X))]
        if random_control:
            versions.append((control, random_eraser(X[fit_rows], eraser.rank, seed)(X)))
        for store, data in versions:
            store.append(
                ev.run_linear_tasks(
                    "logreg", data, [task.y], train, test, dev, task.n_classes, DEFAULT_CS, False, seed, groups
                )[0]
            )
    return before, after, control


def _eraser(job: _Job, file_rows: np.ndarray, X: np.ndarray, codes: np.ndarray, n_codes: int, cache: dict):
    """The eraser fitted on these file rows (cached: a split's folds share their training rows); with
    ``--group``, INLP's holdout of them takes whole groups."""
    key = np.sort(file_rows).tobytes()
    if key not in cache:
        groups = None if job.g_codes is None else job.g_codes[file_rows]
        config = job.config
        cache[key] = fit_eraser(config.method, X, codes, n_codes, config.iterations, config.seed, groups)
    return cache[key]


def _run_job(job: _Job) -> tuple[dict, list[dict], np.ndarray, Eraser]:
    from threadpoolctl import threadpool_limits

    config, main = job.config, job.main
    with threadpool_limits(limits=1), open_complete(job.path) as features:
        X = features.features(job.pooling, job.layer)
    with threadpool_limits(limits=1):
        cache: dict = {}
        before, after, control = _before_after(
            job, main, X[main.kept], main.y, main.n_classes, cache, random_control=True
        )
        rows = main.training_rows()
        final = _eraser(job, main.kept[rows], X[main.kept][rows], main.y[rows], main.n_classes, cache)
        erased = final(X)
        record = {
            "label": main.label,
            "method": config.method,
            "pooling": job.pooling,
            "layer": job.layer,
            "rank": final.rank,
            "iterations": final.iterations,
            "moved": moved(X, erased),
            "p": paired_p_value(
                main.plan, main.y, _oof(main, before), _oof(main, after), max(config.n_bootstrap, 1000), config.seed
            ),
        }
        record["majority"] = _summary(main, main.majority(), config.n_bootstrap, config.seed)[0]
        _put(record, "before", _summary(main, before, config.n_bootstrap, config.seed))
        _put(record, "after", _summary(main, after, config.n_bootstrap, config.seed))
        _put(record, "random_after", _summary(main, control, config.n_bootstrap, config.seed))  # as many random dirs
        record["at_chance"] = bool(record["after_low"] <= record["majority"] + 1e-9)
        amnesic = [_amnesic(job, other, X, cache) for other in job.others]
    return record, amnesic, erased, final


def _put(record: dict, name: str, values: tuple[float, float, float]) -> None:
    record[name], record[f"{name}_low"], record[f"{name}_high"] = values


def _amnesic(job: _Job, task: Task, X: np.ndarray, cache: dict) -> dict:
    config = job.config
    before, after, control = _before_after(
        job, task, X[task.kept], job.l_codes[task.kept], job.main.n_classes, cache, random_control=True
    )
    record: dict[str, Any] = {
        "label": task.label,
        "erased": job.main.label,
        "pooling": job.pooling,
        "layer": job.layer,
        "majority": _summary(task, task.majority(), config.n_bootstrap, config.seed)[0],
        "p": paired_p_value(
            task.plan, task.y, _oof(task, before), _oof(task, after), max(config.n_bootstrap, 1000), config.seed
        ),
    }
    _put(record, "before", _summary(task, before, config.n_bootstrap, config.seed))
    _put(record, "after", _summary(task, after, config.n_bootstrap, config.seed))
    record["change"] = record["after"] - record["before"]
    _put(record, "random_after", _summary(task, control, config.n_bootstrap, config.seed))
    return record


def _other_tasks(features, main: Task, config: EraseConfig, notes: list[str]) -> list[Task]:
    if not config.amnesic or str(config.amnesic).lower() == "none":
        return []
    if str(config.amnesic).lower() == "all":
        names = [name for name in features.label_columns if name != main.label]
    else:
        names = [name.strip() for name in str(config.amnesic).split(",") if name.strip()]
        if main.label in names:
            amnesic = spoken_value(config, "amnesic", main.label)
            raise InputError(f"{amnesic}: that is the erased label", "name the other label columns")
    tasks = []
    for name in names:
        try:
            tasks.append(load_task(features, name, config.folds, config.seed, config.group))
        except InputError as err:
            if str(config.amnesic).lower() != "all":
                raise
            notes.append(f"amnesic probing skips '{name}': {err.message}")
    return tasks


def _plan_jobs(config: EraseConfig, notes: list[str]) -> tuple[list[_Job], dict]:
    with open_complete(config.features) as features:
        refuse_separate_pairs(features, "erase")
        main = load_task(features, config.label, config.folds, config.seed, config.group, notes)
        specs = parse_layer_specs(
            config.layers, features.layers, False, config=config, single_only="erase works on one layer at a time"
        )
        poolings = parse_poolings(config.poolings, features.poolings)
        others = _other_tasks(features, main, config, notes)
        codes = np.full(features.n_rows, -1, dtype=np.int64)
        codes[main.kept] = main.y
        groups = main.file_groups(features.n_rows)
        info = {
            "n_rows": features.n_rows,
            "model": features.attrs.get("model"),
            "model_sha256": features.attrs.get("model_sha256"),
            "fingerprint": features.attrs.get("fingerprint"),
        }
    layers = [spec.layers[0] for spec in specs]
    jobs = [
        _Job(str(config.features), layer, pooling, main, others, codes, config, groups)
        for pooling in poolings
        for layer in layers
    ]
    return jobs, {**info, "layers": layers, "poolings": poolings, "main": main, "others": others}


def _tables(outputs) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = pd.DataFrame([record for record, *_ in outputs], columns=MAIN_COLUMNS)
    for _, group in table.groupby("pooling", sort=False):
        table.loc[group.index, "p_holm"] = holm(group.p.to_numpy())
    amnesic = pd.DataFrame([row for _, rows, *_ in outputs for row in rows], columns=AMNESIC_COLUMNS)
    if not amnesic.empty:
        amnesic = amnesic.sort_values(["label", "pooling", "layer"], kind="stable").reset_index(drop=True)
        for _, group in amnesic.groupby(["label", "pooling"], sort=False):
            amnesic.loc[group.index, "p_holm"] = holm(group.p.to_numpy())
        amnesic["significant"] = amnesic.p_holm < ALPHA
    return table, amnesic


@keywords_of(EraseConfig)  # from Python, a message names the keyword given (method='x'), the CLI the flag
def erase(config: EraseConfig | str | Path, **options) -> EraseResult:
    """Erase a label from every chosen (layer, pooling) of a features file; see ``EraseConfig``."""
    from ...store import write_derived
    from .erase_paths import check_output, default_output, side_file, write_tables

    config = EraseConfig.build(config, **options)
    started = time.perf_counter()
    notes: list[str] = []
    source = Path(config.features)
    jobs, info = _plan_jobs(config, notes)
    main = info["main"]
    output = Path(config.output) if config.output else default_output(source, main.label, config.method)
    if config.write:
        check_output(source, output, config.overwrite)
        check_writable(output)  # before the erasers are fitted
    require_finite_blocks(source, [(job.pooling, job.layer) for job in jobs], as_probed=False)
    outputs = _run(jobs, config)
    table, amnesic = _tables(outputs)
    settings = {
        "kind": "erasure",
        "method": config.method,
        "label": main.label,
        "layers": info["layers"],
        "poolings": info["poolings"],
        "fit_rows": "train split" if main.plan.is_split else "all labelled rows",
        "iterations": {f"{r['pooling']}/{r['layer']}": r["iterations"] for r, *_ in outputs}
        if config.method == "inlp"
        else None,
        "seed": config.seed,
    }
    meta = {
        "features_file": str(source.resolve()),
        "model": info["model"],
        "model_sha256": info["model_sha256"],  # what featx extract --intervene erase checks the model against
        "label": main.label,
        "evaluation": main.plan.evaluation,
        **main.group_meta(),
        "n_bootstrap": config.n_bootstrap,  # the resamples of a split's intervals
        "n_rows": info["n_rows"],
        "classes": main.class_names,
        "amnesic_labels": [task.label for task in info["others"]],
        "settings": settings,
        "notes": notes,
    }
    result = EraseResult(table, amnesic, meta, notes=notes)
    if config.write:
        pooled: dict[str, dict[int, np.ndarray]] = {pooling: {} for pooling in info["poolings"]}
        for record, _, erased, _ in outputs:
            pooled[record["pooling"]][record["layer"]] = erased
        result.output = write_derived(source, output, pooled, settings)
        with writing(output.parent):  # the tables and erasers beside it
            result.csv_path = write_tables(result, output)
            save_erasers(
                {f"{r['pooling']}/{r['layer']}": eraser for r, _, _, eraser in outputs},
                side_file(output, "erasers.npz"),
            )
    meta["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _run(jobs: list[_Job], config: EraseConfig) -> list:
    from ...progress import progress_bar
    from ..inputs import job_workers, run_jobs

    with progress_bar(total=len(jobs), unit="layer", disable=not config.progress, desc="erase") as bar:
        return run_jobs(_run_job, [(job,) for job in jobs], job_workers(config.jobs, len(jobs)), done=bar.update)
