"""Regression probes of a numeric label column: ridge (and an MLP head) per layer spec and pooling.

The same rigour as the classification probes (``api.py``): the same outer plan (the file's split, else
seeded k-fold), everything fitted inside the training part, the training mean as baseline, a control
task on permuted targets (selectivity = R² - control R²), and paired layer tests on squared errors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import InputError
from ...selection import parse_layer_specs, parse_poolings
from ...store import FeatureFile, schema
from ..config import TASKS, ProbeConfig
from ..evaluation import regression_metrics as rm
from ..solvers import ridge

MIN_DISTINCT = 10  # a numeric column with at least this many distinct values is probed as regression
CLASSIFIER_NAMES = {"logreg": "ridge", "ridge": "ridge", "mlp": "mlp"}
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
    "evaluation",
]
STRATA = 5  # learning curves subsample each training part stratified by quantile bins of the target
REGRESSION_COLUMNS = [
    "features",
    "site",
    "label",
    "task",
    "layer_spec",
    "kind",
    "layer",
    "layers",
    "pooling",
    "classifier",
    *[f"{name}{suffix}" for name in rm.METRICS for suffix in ("", "_low", "_high")],
    "control_r2",
    "selectivity",
    "alpha",
    "fit_seconds",
    "n_train",
    "n_test",
    "evaluation",
    "is_best",
    *rm.SIGNIFICANCE,
]


def resolve_task(features: FeatureFile, label: str, task: str) -> str:
    """``classification`` or ``regression`` for ``label``: ``task`` unless auto, where a numeric column
    with at least ``MIN_DISTINCT`` distinct values is regression."""
    task = str(task or "auto").lower()
    if task not in TASKS:
        raise InputError(f"--task {task} is not known", "choose classification, regression or auto")
    if task == "classification":
        return task
    values = features.label_values(label)
    if task == "regression":
        if values is None:
            raise InputError(
                f"label column '{label}' is not numeric: it cannot be probed as regression",
                "drop --task regression to probe it as classes",
            )
        return task
    return (
        "regression"
        if values is not None and len(np.unique(values[np.isfinite(values)])) >= MIN_DISTINCT
        else "classification"
    )


def regression_classifiers(config: ProbeConfig) -> list[str]:
    names = config.classifiers if isinstance(config.classifiers, (list, tuple)) else str(config.classifiers).split(",")
    chosen = []
    for name in (str(part).strip().lower() for part in names if str(part).strip()):
        if name not in CLASSIFIER_NAMES:
            raise InputError(
                f"classifier '{name}' has no regression form",
                "regression probes: ridge (also what logreg means here) and mlp",
            )
        if CLASSIFIER_NAMES[name] not in chosen:
            chosen.append(CLASSIFIER_NAMES[name])
    return chosen


def make_plan(values: np.ndarray, split, folds: int, seed: int):
    """The file's train/test split when both parts have rows, else seeded (unstratified) k-fold."""
    from sklearn.model_selection import KFold

    from .. import evaluation as ev

    if split is not None:
        lowered = np.char.lower(np.asarray(split, dtype=str))
        train = np.flatnonzero(np.isin(lowered, ev.TRAIN_VALUES))
        test = np.flatnonzero(np.isin(lowered, ev.TEST_VALUES))
        dev = np.flatnonzero(np.isin(lowered, ev.DEV_VALUES))
        if len(train) >= 2 and len(test) >= 2:
            return ev.Plan("split", [(train, test)], [dev if len(dev) else None])
    if len(values) < 2 * folds:
        raise InputError(
            f"only {len(values)} labelled rows for {folds}-fold cross-validation", "use fewer folds or more data"
        )
    pairs = list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros(len(values))))
    return ev.Plan(f"{folds}-fold cv", pairs, [None] * len(pairs))


@dataclass
class _Shared:
    allow_partial: bool
    kept: np.ndarray
    y: np.ndarray
    y_control: np.ndarray | None
    plan: object
    label: str
    alphas: tuple[float, ...]
    seed: int
    n_bootstrap: int
    threads: int


def _fit_folds(classifier: str, data, targets: list[np.ndarray], shared: _Shared) -> list[list]:
    results: list[list] = [[] for _ in targets]
    for index, ((train, test), dev) in enumerate(zip(shared.plan.folds, shared.plan.dev, strict=False)):
        seed = shared.seed + 1000 * index
        if classifier == "ridge":
            fold = ridge.run_ridge(data, targets, train, test, dev, shared.alphas, seed)
        else:
            fold = [ridge.run_mlp(data, y, train, test, dev, seed) for y in targets]
        for per_target, result in zip(results, fold, strict=False):
            per_target.append(result)
    return results


def _out_of_fold(shared: _Shared, folds) -> np.ndarray:
    predictions = np.full(len(shared.y), np.nan)
    for (_, test), result in zip(shared.plan.folds, folds, strict=False):
        predictions[test] = result.predictions
    return predictions


def _record(job, classifier: str, row: dict, shared: _Shared) -> dict:
    return {
        "features": job.features,
        "site": job.site,
        "label": shared.label,
        "task": "regression",
        "layer_spec": job.spec.name,
        "kind": job.spec.kind,
        "layer": job.spec.layers[0] if job.spec.kind == "single" else None,
        "layers": ",".join(map(str, job.spec.layers)),
        "pooling": job.pooling,
        "classifier": classifier,
        "evaluation": shared.plan.evaluation,
        "control_r2": float("nan"),
        "selectivity": float("nan"),
        **row,
    }


def _run_job(job, shared: _Shared) -> list[dict]:
    from threadpoolctl import threadpool_limits

    from ..inputs import _load

    with threadpool_limits(limits=shared.threads):
        data = _load(job, shared)
        targets = [shared.y] if shared.y_control is None else [shared.y, shared.y_control]
        records = []
        for classifier in job.classifiers:
            folds, *control = _fit_folds(classifier, data, targets, shared)
            row = rm.summarise(shared.plan, shared.y, folds, shared.n_bootstrap, shared.seed)
            record = _record(job, classifier, row, shared)
            if control:
                scores = [
                    float(rm.metrics(shared.y_control[test], result.predictions)["r2"])
                    for (_, test), result in zip(shared.plan.folds, control[0], strict=False)
                ]
                record["control_r2"] = float(np.mean(scores))
                record["selectivity"] = record["r2"] - record["control_r2"]
            record["_predictions"] = _out_of_fold(shared, folds)
            records.append(record)
    return records


def _run_curve_job(job, shared: _Shared, sizes: list[float]) -> list[dict]:
    """Learning-curve points of one job: the same outer folds, each training part subsampled (stratified
    by quantile bins of the target), the test part unchanged."""
    from dataclasses import replace

    from threadpoolctl import threadpool_limits

    from ..analyses.curves import subsampled_plan
    from ..inputs import _load

    edges = np.quantile(shared.y, np.linspace(0, 1, STRATA + 1)[1:-1])
    strata = np.searchsorted(edges, shared.y, side="right")
    records = []
    with threadpool_limits(limits=shared.threads):
        data = _load(job, shared)
        for size in sizes:
            plan = subsampled_plan(shared.plan, strata, size, shared.seed)
            for classifier in job.classifiers:
                folds = _fit_folds(classifier, data, [shared.y], replace(shared, plan=plan))[0]
                row = rm.summarise(plan, shared.y, folds, min(shared.n_bootstrap, 200), shared.seed)
                records.append(
                    {
                        "features": job.features,
                        "site": job.site,
                        "label": shared.label,
                        "task": "regression",
                        "layer_spec": job.spec.name,
                        "layer": job.spec.layers[0] if job.spec.kind == "single" else None,
                        "pooling": job.pooling,
                        "classifier": classifier,
                        "train_size": size,
                        "evaluation": plan.evaluation,
                        **{key: row[key] for key in CURVE_COLUMNS if key in row},
                    }
                )
    return records


def _curves(config: ProbeConfig, path, read: dict, shared: _Shared, classifiers: list[str], workers: int):
    """The learning-curve table (``--train-sizes``) of the probed single and cat specs, or None."""
    if config.train_sizes is None:
        return None, None
    from ..analyses.curves import parse_train_sizes
    from ..inputs import _Job

    sizes = parse_train_sizes(config.train_sizes)
    layers = config.curve_layers
    specs = parse_layer_specs(layers, read["layers"]) if layers else read["specs"]
    jobs = [
        _Job("main", str(path), spec, pooling, list(classifiers))
        for spec in specs
        if spec.kind != "stack"
        for pooling in read["poolings"]
    ]
    from ..inputs import run_jobs

    parts = run_jobs(_run_curve_job, [(job, shared, sizes) for job in jobs], min(workers, len(jobs)))
    return pd.DataFrame.from_records([record for part in parts for record in part], columns=CURVE_COLUMNS), sizes


def _mean_baseline(shared: _Shared) -> dict:
    from ...selection import LayerSpec
    from ..inputs import _Job

    folds = [ridge.run_mean(shared.y, train, test) for train, test in shared.plan.folds]
    row = rm.summarise(shared.plan, shared.y, folds, shared.n_bootstrap, shared.seed)
    record = _record(_Job("main", "", LayerSpec("mean", ()), "", ["mean"]), "mean", row, shared)
    record.update(site="", layer_spec="train mean", kind="baseline", layers="")
    return record


def _mark_best(table: pd.DataFrame) -> pd.Series:
    best = pd.Series(False, index=table.index)
    for _, group in table[table.kind != "baseline"].groupby(["features", "site", "pooling", "classifier"], sort=False):
        singles = group[group.kind == "single"]
        pool = singles if not singles.empty else group
        if pool.r2.notna().any():
            best[pool.r2.idxmax()] = True
    return best


def _order(table: pd.DataFrame, read: dict, classifiers: list[str]) -> list[int]:
    """Row order of the table: baseline first, then features, site, classifier, pooling, layer spec."""
    keys = pd.DataFrame(
        {
            "f": table.features.map({"main": 0, "baseline": 1}),
            "site": table.site.map({name: i for i, name in enumerate(["", *read["sites"]])}),
            "c": table.classifier.map({name: i for i, name in enumerate(classifiers)}).fillna(-1),
            "p": table.pooling.map({name: i for i, name in enumerate(["", *read["poolings"]])}),
            "s": table.layer_spec.map({spec.name: i for i, spec in enumerate(read["specs"])}).fillna(-1),
        }
    )
    return list(keys.sort_values(["f", "site", "c", "p", "s"], kind="stable").index)


def _jobs(config: ProbeConfig, path, sites: dict, classifiers: list[str], notes: list[str]) -> list:
    from ..inputs import _Job

    sources = [("main", str(path))] + ([("baseline", str(config.baseline))] if config.baseline is not None else [])
    jobs = []
    for source, source_path in sources:
        for site, (site_specs, site_poolings) in sites.items():
            for spec in site_specs:
                if spec.kind == "stack":
                    continue
                jobs.extend(
                    _Job(source, source_path, spec, pooling, list(classifiers), site) for pooling in site_poolings
                )
    if any(spec.kind == "stack" for specs, _ in sites.values() for spec in specs):
        notes.append("stack is a classification meta-probe: skipped for regression (use cat(...) to combine layers)")
    return jobs


def _prediction_table(table: pd.DataFrame, predictions: dict, y: np.ndarray, row_info: pd.DataFrame):
    """Per-row out-of-fold predictions of every single layer of the best pooling/classifier (hidden states)."""
    singles = table[(table.features == "main") & (table.kind == "single") & (table.site == "hidden")]
    if singles.empty:
        return None, ""
    best = singles.loc[singles.r2.idxmax()]
    chosen = singles[(singles.pooling == best.pooling) & (singles.classifier == best.classifier)]
    frame = row_info.copy()
    frame.insert(2, "label", y)
    tested = np.zeros(len(y), bool)
    for index, record in chosen.iterrows():
        tested |= np.isfinite(predictions[index])
        frame[f"layer_{record.layer_spec}"] = predictions[index]
    return frame[tested].reset_index(drop=True), f"{best.pooling}/{best.classifier}"


def _read(config: ProbeConfig, path, label: str, notes: list[str]) -> dict:
    from ..inputs import _check_baseline, _check_baseline_sites, _check_corpus, _site_plan

    with FeatureFile(path, allow_partial=config.allow_partial) as features:
        _check_corpus(features, notes)
        values = features.label_values(label)
        kept = np.flatnonzero(np.isfinite(values))
        if len(kept) < 4 or len(np.unique(values[kept])) < 2:
            raise InputError(
                f"label column '{label}' of {path} has too few distinct values to regress on",
                "pick another column with --label NAME",
            )
        split = features.split
        specs = parse_layer_specs(config.layers, features.layers)
        poolings = parse_poolings(config.poolings, features.poolings)
        sites = _site_plan(features, config, specs, poolings, notes)
        row_info = pd.DataFrame(
            {
                "row": kept,
                "id": np.asarray(features.ids, dtype=object)[kept],
                "n_tokens": features.n_tokens[kept],
                "truncated": features.truncated[kept],
            }
        )
        if split is not None:
            row_info["split"] = np.asarray(split, dtype=object)[kept]
        if config.baseline is not None:
            with FeatureFile(config.baseline, allow_partial=config.allow_partial) as other:
                _check_baseline(features, other, specs, poolings, False)
                _check_baseline_sites(other, sites)
        return {
            "values": values,
            "kept": kept,
            "split": split[kept] if split is not None else None,
            "specs": specs,
            "poolings": poolings,
            "layers": list(features.layers),
            "sites": sites,
            "row_info": row_info,
            "n_rows": features.n_rows,
            "file": {
                key: features.attrs.get(key)
                for key in (schema.MODEL, schema.MODEL_SHA256, schema.CORPUS_PATH, schema.CORPUS_SHA256)
            },
        }


def probe_regression(config: ProbeConfig, path, label: str, notes: list[str], started: float):
    """The regression run of ``featx.probe`` (called by it once the label is known to be regression)."""
    from ..inputs import ProbeResult, _versions, _workers, run_jobs, write_result
    from .pairs import baseline_meta

    classifiers = regression_classifiers(config)
    if config.mdl:
        notes.append("MDL is classification-only: no codelength for a regression label")
    if str(config.device).strip().lower().startswith("cuda"):
        notes.append(f"--device {config.device} moves logreg probes only: the ridge probes run on the CPU")
    read = _read(config, path, label, notes)
    kept, y = read["kept"], read["values"][read["kept"]]
    plan = make_plan(y, read["split"], int(config.folds), int(config.seed))
    y_control = np.random.default_rng(config.seed + 7919).permutation(y) if config.control else None
    jobs = _jobs(config, path, read["sites"], classifiers, notes)
    workers, threads = _workers(config, len(jobs))
    shared = _Shared(
        config.allow_partial,
        kept,
        y,
        y_control,
        plan,
        label,
        tuple(float(a) for a in config.alphas),
        int(config.seed),
        int(config.n_bootstrap),
        threads,
    )
    outputs = run_jobs(_run_job, [(job, shared) for job in jobs], workers)
    records = [_mean_baseline(shared)] + [record for output in outputs for record in output]
    oof = [record.pop("_predictions", None) for record in records]
    table = pd.DataFrame.from_records(records)
    order = _order(table, read, classifiers)
    table, oof = table.iloc[order].reset_index(drop=True), [oof[i] for i in order]
    table["is_best"] = _mark_best(table)
    predictions = {index: values for index, values in zip(table.index, oof, strict=False) if values is not None}
    table = rm.add_significance(table, predictions, plan, y, max(int(config.n_bootstrap), 1000), int(config.seed))
    table = table[REGRESSION_COLUMNS]
    table["layer"] = table["layer"].astype("Int64")
    prediction_table, predictions_for = _prediction_table(table, predictions, y, read["row_info"])
    curve, sizes = _curves(config, path, read, shared, classifiers, workers)
    meta = {
        "features_file": str(path.resolve()),
        **read["file"],
        "task": "regression",
        "label": label,
        "target": {"mean": float(y.mean()), "std": float(y.std()), "min": float(y.min()), "max": float(y.max())},
        "n_rows": int(read["n_rows"]),
        "n_labelled": int(len(y)),
        "n_missing_labels": int(read["n_rows"] - len(y)),
        "evaluation": plan.evaluation,
        "folds": int(config.folds) if not plan.is_split else None,
        "n_dev": int(len(plan.dev[0])) if plan.is_split and plan.dev[0] is not None else 0,
        "seed": int(config.seed),
        "classifiers": classifiers,
        "poolings": read["poolings"],
        "sites": list(read["sites"]),
        "layer_specs": [spec.name for spec in read["specs"]],
        "alphas": list(config.alphas),
        "control": bool(config.control),
        "baseline_file": str(config.baseline) if config.baseline else None,
        "jobs": workers,
        "seconds": round(time.perf_counter() - started, 3),
        **{f"{k}_version": v for k, v in _versions().items()},
        "notes": list(notes),
        "predictions_for": predictions_for,
        "mdl": False,
        "train_sizes": sizes,
    }
    meta.update(baseline_meta(config, path, kept, y, plan, read["specs"], read["poolings"]))  # sentence pairs
    result = ProbeResult(table, meta, notes=list(notes), predictions=prediction_table, curve=curve)
    if config.write:
        write_result(result, path, label, config.output)
    return result
