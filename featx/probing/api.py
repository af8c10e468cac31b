"""``featx.probe``: probes per layer spec, pooling and classifier on a features file, in parallel."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..selection import LayerSpec, parse_layer_specs, parse_poolings
from ..state import given_or_last
from ..store import FeatureFile, schema
from . import evaluation as ev
from .config import ProbeConfig
from .evaluation.significance import add_significance
from .inputs import (
    JOB_THREADS,
    TOKENS_POOLING,
    ProbeResult,
    _check_baseline,
    _check_baseline_sites,
    _check_corpus,  # noqa: F401
    _Job,
    _load,
    _site_plan,
    _versions,
    run_jobs,
    solver_plan,
    write_result,
)
from .labels import join_labels, prepare, split_note, stored_column
from .results import COLUMNS, CURVE_COLUMNS
from .solvers import classifiers as clf
from .solvers.devices import solver_meta
from .tasks.pairs import baseline_meta
from .tasks.regression import resolve_task

MIN_TEST_ROWS = 30  # below this many scored rows a probe's accuracy says little (a warning)


# -- resolving the inputs ----------------------------------------------------------------------------
def _default_label(features: FeatureFile, config: ProbeConfig, notes: list[str]) -> str:
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


def _label_column_of(features: FeatureFile, config: ProbeConfig, notes: list[str], label: str | None = None):
    """The label column to probe (``label`` if already chosen): stored, or joined from ``--labels``; binned /
    rare classes dropped as asked."""
    if config.labels is not None:
        columns = join_labels(features, config.labels, config.join)
        names = list(columns)
        label = config.label or ("label" if "label" in columns else names[0])
        if label not in columns:
            raise InputError(
                f"{config.labels} has no label column '{label}'; label columns: {', '.join(names)}",
                "pick one with --label NAME",
            )
        notes.append(f"labels from {config.labels} (joined by {config.join}): probing '{label}'")
        column = columns[label]
    else:
        column = stored_column(features, label or _default_label(features, config, notes))
    return prepare(column, config.bins, config.min_class_rows, notes)


def _curve_plan(
    features: FeatureFile, config: ProbeConfig, sites: dict
) -> dict[str, tuple[list[LayerSpec], list[str]]]:
    """Per probed site: the layer specs of its learning curves (``--curve-layers``, else the probed
    single and concatenated specs) and its poolings."""
    plan = {}
    for site, (site_specs, site_poolings) in sites.items():
        chosen = site_specs
        if config.curve_layers:
            layers = features.layers if site == "hidden" else features.site_layers(site)
            try:
                chosen = parse_layer_specs(config.curve_layers, layers)
            except InputError as err:
                raise InputError(
                    f"--curve-layers for site '{site}' (layers {layers}): {err.message}", err.hint
                ) from None
        plan[site] = ([spec for spec in chosen if spec.kind != "stack"], site_poolings)
    return plan


# -- the jobs ------------------------------------------------------------------------------------


@dataclass
class _Shared:
    """Everything a job needs besides its features; sent once to each worker."""

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


def _fit_folds(
    classifier: str, kind: str, data, labels: list[np.ndarray], shared: _Shared
) -> list[list[ev.FoldResult]]:
    """Every outer fold for each label vector (the real labels, then the control task's, when asked);
    single and concatenated logreg probes fit all vectors of a fold in one batched solve."""
    results: list[list[ev.FoldResult]] = [[] for _ in labels]
    for index, ((train, test), dev) in enumerate(zip(shared.plan.folds, shared.plan.dev, strict=False)):
        seed = shared.seed + 1000 * index
        if kind != "stack" and classifier in clf.LINEAR:
            fold = ev.run_linear_tasks(
                classifier, data, labels, train, test, dev, shared.n_classes, shared.cs, shared.balanced, seed
            )
        else:
            fold = [_fit_fold(classifier, kind, data, y, train, test, dev, shared, seed) for y in labels]
        for per_vector, result in zip(results, fold, strict=False):
            per_vector.append(result)
    return results


def _fit_fold(classifier, kind, data, y, train, test, dev, shared: _Shared, seed) -> ev.FoldResult:
    args = (y, train, test, dev, shared.n_classes)
    if classifier == "attn":
        return ev.run_attention(data, *args, shared.balanced, seed)
    if classifier == "mlp":
        return ev.run_mlp(data, *args, shared.balanced, seed)
    return ev.run_stack(classifier, data, *args, shared.cs, shared.balanced, seed)


def _run_job(job: _Job, shared: _Shared) -> list[dict]:
    from threadpoolctl import threadpool_limits

    limits = threadpool_limits(limits=shared.threads)
    torch = None
    if any(name in clf.TORCH for name in job.classifiers):  # torch is slow to import: only when used
        import torch

        torch_threads = torch.get_num_threads()
        torch.set_num_threads(shared.threads)
    # Imported before any timing, so a worker's first fit_seconds does not include import time.
    import sklearn.linear_model  # noqa: F401
    import sklearn.svm  # noqa: F401

    try:
        data = _load(job, shared)
        code = _online_code(job, data, shared) if shared.mdl else None
        rows = []
        labels = [shared.y] if shared.y_control is None else [shared.y, shared.y_control]
        for classifier in job.classifiers:
            folds, *control = _fit_folds(classifier, job.spec.kind, data, labels, shared)
            row = ev.summarise(shared.plan, shared.y, folds, shared.n_classes, shared.n_bootstrap, shared.seed)
            row["mdl_bits"] = code.bits if code is not None else float("nan")
            row["mdl_compression"] = code.compression if code is not None else float("nan")
            if control:
                row["control_accuracy"] = _control_accuracy(shared, control[0])
                row["selectivity"] = row["accuracy"] - row["control_accuracy"]
            record = _record(job, classifier, row, shared)
            record["_predictions"] = _out_of_fold(shared, folds)
            rows.append(record)
        return rows
    finally:
        limits.restore_original_limits()
        if torch is not None:
            torch.set_num_threads(torch_threads)


def _online_code(job: _Job, data, shared: _Shared):
    """The MDL online code of this job's features (pooled single/cat specs only; stack and tokens: none)."""
    from .analyses.mdl import coded_rows, online_codelength

    if job.pooling == TOKENS_POOLING or job.spec.kind == "stack":
        return None
    return online_codelength(data, shared.y, shared.n_classes, coded_rows(shared.plan), shared.seed, shared.cs)


def _out_of_fold(shared: _Shared, folds: list[ev.FoldResult]) -> np.ndarray:
    """Each labelled row's prediction from the fold that tested it (-1: never tested, e.g. train rows)."""
    predictions = np.full(len(shared.y), -1, dtype=np.int32)
    for (_, test), result in zip(shared.plan.folds, folds, strict=False):
        predictions[test] = result.predictions
    return predictions


def _run_curve_job(job: _Job, shared: _Shared, sizes: list[float]) -> list[dict]:
    """Learning-curve points of one job: the same outer folds, each training part subsampled."""
    from threadpoolctl import threadpool_limits

    from .analyses.curves import subsampled_plan

    records = []
    with threadpool_limits(limits=shared.threads):
        data = _load(job, shared)
        for size in sizes:
            plan = subsampled_plan(shared.plan, shared.y, size, shared.seed)
            sub = replace(shared, plan=plan)
            for classifier in job.classifiers:
                folds = _fit_folds(classifier, job.spec.kind, data, [shared.y], sub)[0]
                row = ev.summarise(plan, shared.y, folds, shared.n_classes, min(shared.n_bootstrap, 200), shared.seed)
                records.append(
                    {
                        "features": job.features,
                        "site": job.site,
                        "label": shared.label,
                        "layer_spec": job.spec.name,
                        "layer": job.spec.layers[0] if job.spec.kind == "single" else None,
                        "pooling": job.pooling,
                        "classifier": classifier,
                        "train_size": size,
                        "n_train": row["n_train"],
                        "accuracy": row["accuracy"],
                        "accuracy_low": row["accuracy_low"],
                        "accuracy_high": row["accuracy_high"],
                        "macro_f1": row["macro_f1"],
                        "evaluation": plan.evaluation,
                    }
                )
    return records


def _check_predictions_choice(choice: str | None, poolings: list[str], classifiers: list[str]) -> None:
    """Fail before the (long) run when --predictions names a pooling or classifier that is not probed."""
    if not choice:
        return
    pooling, _, classifier = str(choice).partition("/")
    known = poolings + ([TOKENS_POOLING] if "attn" in classifiers else [])
    if pooling not in known or (classifier and classifier not in classifiers):
        raise InputError(
            f"--predictions {choice}: that pooling/classifier is not probed in this run",
            f"choose a pooling of {', '.join(known)} and a classifier of {', '.join(classifiers)}",
        )


def _prediction_table(
    table: pd.DataFrame,
    predictions: dict,
    choice: str | None,
    class_names: list[str],
    y: np.ndarray,
    row_info: pd.DataFrame,
) -> tuple[pd.DataFrame | None, str]:
    """Per-row out-of-fold predictions (class names) of every single layer for one pooling/classifier."""
    singles = table[(table.features == "main") & (table.kind == "single")]
    if "site" in singles:  # the per-row predictions are those of the hidden states
        singles = singles[singles.site == "hidden"]
    if singles.empty:
        return None, ""
    if choice:
        pooling, _, classifier = str(choice).partition("/")
        chosen = singles[singles.pooling == pooling]
        if classifier:
            chosen = chosen[chosen.classifier == classifier]
        if chosen.empty:
            raise InputError(
                f"--predictions {choice}: no single-layer results for that pooling/classifier",
                f"choose from {', '.join(sorted(set(singles.pooling + '/' + singles.classifier)))}",
            )
        classifier = chosen.classifier.iloc[0]
        chosen = chosen[chosen.classifier == classifier]
    else:
        best = singles.loc[singles.accuracy.idxmax()]
        pooling, classifier = best.pooling, best.classifier
        chosen = singles[(singles.pooling == pooling) & (singles.classifier == classifier)]
    names = np.asarray(class_names, dtype=object)
    frame = row_info.copy()
    frame.insert(2, "label", names[y])
    tested = np.zeros(len(y), bool)
    for index, record in chosen.iterrows():
        values = predictions[index]
        tested |= values >= 0
        frame[f"layer_{record.layer_spec}"] = np.where(values >= 0, names[np.maximum(values, 0)], "")
    return frame[tested].reset_index(drop=True), f"{pooling}/{classifier}"


def _control_accuracy(shared: _Shared, folds: list[ev.FoldResult]) -> float:
    """The control task's accuracy as ``summarise`` reports accuracy: the mean over the outer folds
    (the one test part of a split)."""
    return float(
        np.mean(
            [
                np.mean(result.predictions == shared.y_control[test])
                for (_, test), result in zip(shared.plan.folds, folds, strict=False)
            ]
        )
    )


def _record(job: _Job, classifier: str, row: dict, shared: _Shared) -> dict:
    per_class = row.pop("per_class_f1")
    weights = row.pop("layer_weights")
    record = {
        "features": job.features,
        "site": job.site,
        "label": shared.label,
        "task": "classification",
        "layer_spec": job.spec.name,
        "kind": job.spec.kind,
        "layer": job.spec.layers[0] if job.spec.kind == "single" else None,
        "layers": ",".join(map(str, job.spec.layers)),
        "pooling": job.pooling,
        "classifier": classifier,
        "evaluation": shared.plan.evaluation,
        "control_accuracy": float("nan"),
        "selectivity": float("nan"),
        **row,
        "per_class_f1": json.dumps(
            {
                name: (None if not np.isfinite(value) else round(float(value), 6))
                for name, value in zip(shared.class_names, per_class, strict=False)
            }
        ),
        "layer_weights": json.dumps({str(layer): round(float(w), 6) for layer, w in zip(job.spec.layers, weights, strict=False)})
        if weights is not None
        else "",
    }
    return record


def _majority(shared: _Shared) -> dict:
    folds = [ev.run_majority(shared.y, train, test, shared.n_classes) for train, test in shared.plan.folds]
    row = ev.summarise(shared.plan, shared.y, folds, shared.n_classes, shared.n_bootstrap, shared.seed)
    row["mdl_bits"] = row["mdl_compression"] = float("nan")
    job = _Job("main", "", LayerSpec("majority", ()), "", ["majority"])
    record = _record(job, "majority", row, shared)
    record.update(site="", layer_spec="majority", kind="majority", layers="", C=float("nan"))
    return record


def _mark_best(table: pd.DataFrame) -> pd.Series:
    best = pd.Series(False, index=table.index)
    candidates = table[table.kind != "majority"]
    for _, group in candidates.groupby(["features", "site", "pooling", "classifier"], sort=False):
        singles = group[group.kind == "single"]
        pool = singles if not singles.empty else group
        if pool.accuracy.notna().any():
            best[pool.accuracy.idxmax()] = True
    return best


def probe(config: ProbeConfig | str | Path | None = None, **options) -> ProbeResult:
    """Probe a features file: ``featx.probe("feats.h5", layers="all", poolings="mean,cls")``.

    Takes a ``ProbeConfig`` or its fields as keywords; returns a ``ProbeResult`` whose ``table``
    is the results DataFrame (also written as CSV and JSON unless ``write=False``).
    """
    if isinstance(config, (str, Path)):
        config = ProbeConfig(features=config, **options)
    elif config is None:
        config = ProbeConfig(**options)
    elif options:
        config = replace(config, **options)
    started = time.perf_counter()
    path, using_last = given_or_last(config.features, "features")
    notes = [using_last] if using_last else []  # messages for the user, gathered while resolving
    classifiers = config.classifier_list()

    with FeatureFile(path, allow_partial=config.allow_partial) as features:
        if not features.complete:
            notes.append(f"warning: {path} is incomplete; probing the {features.n_rows} rows written so far")
        _check_corpus(features, notes)
        from .tasks.words import wants_words

        if config.labels is None and wants_words(features, config):  # a word-level label, or --arcs
            from .tasks.words import probe_words

            features.close()
            return probe_words(config, Path(path), notes, started)
        label = None
        if config.labels is None:
            label = _default_label(features, config, notes)
            if resolve_task(features, label, config.task) == "regression":
                from .tasks.regression import probe_regression

                return probe_regression(config, Path(path), label, notes, started)
        column = _label_column_of(features, config, notes, label)
        label, codes, names = column.name, column.codes, column.names
        if "ridge" in classifiers:
            raise InputError(
                f"ridge is a regression probe, and '{label}' is probed as classes",
                "use --classifier logreg, or --task regression for a numeric label",
            )
        kept = np.flatnonzero(codes >= 0)
        y = codes[kept].astype(np.int64)
        ev.check_labels(y, names, label, path)
        split = features.split
        specs = parse_layer_specs(config.layers, features.layers)
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
        poolings = parse_poolings(config.poolings, features.poolings)
        sites = _site_plan(features, config, specs, poolings, notes)
        curve_plan = _curve_plan(features, config, sites) if config.train_sizes is not None else {}
        if "attn" in classifiers and not features.has_tokens:
            raise InputError(
                f"the attn probe needs token-level states, and {path} has none",
                "re-extract with featx extract --tokens, or choose --classifier logreg,svm,mlp",
            )
        meta_file = {
            key: features.attrs.get(key)
            for key in (schema.MODEL, schema.MODEL_SHA256, schema.CORPUS_PATH, schema.CORPUS_SHA256)
        }
        n_rows = features.n_rows
        if config.baseline is not None:
            with FeatureFile(config.baseline, allow_partial=config.allow_partial) as other:
                _check_baseline(features, other, specs, poolings, "attn" in classifiers)
                _check_baseline_sites(other, sites)
                baseline_model = other.attrs.get(schema.MODEL)
                if other.attrs.get(schema.RANDOM_INIT):
                    baseline_model = f"{baseline_model} (random init)"

    _check_predictions_choice(config.predictions, poolings, classifiers)
    # Present classes only, renumbered 0..k-1, so that metrics and probes never see empty classes.
    present = np.unique(y)
    class_names = [names[code] for code in present]
    y = np.searchsorted(present, y)
    plan = ev.make_plan(
        y, split[kept] if split is not None else None, int(config.folds), config.seed, class_names, label
    )
    if split is not None and plan.is_split:
        notes.append(split_note(plan, split, kept))
    if split is not None and not plan.is_split:
        found = ", ".join(sorted(set(map(str, split[kept])))[:6])
        notes.append(
            f"the split column has no train and test rows to use (values: {found}); "
            f"cross-validating with {config.folds} folds instead"
        )
    scored = sum(len(test) for _, test in plan.folds)  # the test rows of a split; every row under cv
    if scored < MIN_TEST_ROWS:
        what = "test rows" if plan.is_split else "rows scored over all folds"
        notes.append(
            f"warning: only {scored} {what}: accuracies and their intervals are too coarse to mean much "
            f"(each row moves accuracy by {1 / max(scored, 1):.2f}); use at least {MIN_TEST_ROWS}"
        )
    rng = np.random.default_rng(config.seed + 7919)
    y_control = rng.permutation(y) if config.control else None

    jobs: list[_Job] = []
    sources = [("main", str(path))] + ([("baseline", str(config.baseline))] if config.baseline is not None else [])
    pooled_classifiers = [name for name in classifiers if name != "attn"]
    for source, source_path in sources:
        for site, (site_specs, site_poolings) in sites.items():
            for spec in site_specs:
                for pooling in site_poolings:
                    usable = [name for name in pooled_classifiers if not (spec.kind == "stack" and name == "mlp")]
                    if usable:
                        jobs.append(_Job(source, source_path, spec, pooling, usable, site))
                if "attn" in classifiers and spec.kind != "stack":
                    jobs.append(_Job(source, source_path, spec, TOKENS_POOLING, ["attn"], site))
    if any(spec.kind == "stack" for spec in specs) and ("mlp" in classifiers or "attn" in classifiers):
        notes.append("stack combines linear probes only: it is skipped for mlp and attn")

    device, workers = solver_plan(config, len(jobs), notes, "logreg" in classifiers or bool(config.mdl))
    shared = _Shared(
        config.allow_partial,
        kept,
        y,
        y_control,
        plan,
        len(class_names),
        label,
        class_names,
        tuple(float(c) for c in config.cs),
        bool(config.balanced),
        int(config.seed),
        int(config.n_bootstrap),
        JOB_THREADS,
        bool(config.mdl),
    )
    outputs = run_jobs(_run_job, [(job, shared) for job in jobs], workers, device)
    records = [_majority(shared)] + [record for output in outputs for record in output]
    oof = [record.pop("_predictions", None) for record in records]

    table = pd.DataFrame.from_records(records)
    table["_id"] = np.arange(len(table))
    order = {name: i for i, name in enumerate(["", *poolings, TOKENS_POOLING])}
    spec_order = {spec.name: i for i, spec in enumerate(specs)}
    site_order = {name: i for i, name in enumerate(["", *sites])}
    table = table.assign(
        _f=table.features.map({"main": 0, "baseline": 1}),
        _p=table.pooling.map(order),
        _site=table.site.map(site_order),
        _s=table.layer_spec.map(spec_order).fillna(-1),
        _c=table.classifier.map({n: i for i, n in enumerate(classifiers)}).fillna(-1),
    )
    table = table.sort_values(["_f", "_site", "_c", "_p", "_s"], kind="stable").reset_index(drop=True)
    table["is_best"] = _mark_best(table)
    predictions = {index: oof[i] for index, i in zip(table.index, table["_id"], strict=False) if oof[i] is not None}
    table = add_significance(table, predictions, plan, y, max(int(config.n_bootstrap), 1000), int(config.seed))
    table = table[COLUMNS]
    table["layer"] = table["layer"].astype("Int64")
    prediction_table, predictions_for = _prediction_table(
        table, predictions, config.predictions, class_names, y, row_info
    )
    curve, sizes = None, None
    if curve_plan:
        from .analyses.curves import parse_train_sizes

        sizes = parse_train_sizes(config.train_sizes)
        curve_jobs = [
            _Job("main", str(path), spec, pooling, list(pooled_classifiers), site)
            for site, (site_specs, site_poolings) in curve_plan.items()
            for spec in site_specs
            for pooling in site_poolings
            if pooled_classifiers
        ]
        curve_jobs += [
            _Job("main", str(path), spec, TOKENS_POOLING, ["attn"], site)
            for site, (site_specs, _) in curve_plan.items()
            for spec in site_specs
            if "attn" in classifiers
        ]
        parts = run_jobs(
            _run_curve_job, [(job, shared, sizes) for job in curve_jobs], min(workers, len(curve_jobs)), device
        )
        curve = pd.DataFrame.from_records([record for part in parts for record in part], columns=CURVE_COLUMNS)
    counts = np.bincount(y, minlength=len(class_names))
    meta = {
        "features_file": str(Path(path).resolve()),
        **meta_file,
        "label": label,
        "label_names": class_names,
        "class_counts": {name: int(count) for name, count in zip(class_names, counts, strict=False)},
        "n_rows": int(n_rows),
        "n_labelled": int(len(y)),
        "n_missing_labels": int(n_rows - len(y)),
        "evaluation": plan.evaluation,
        "folds": int(config.folds) if not plan.is_split else None,
        "n_dev": int(len(plan.dev[0])) if plan.is_split and plan.dev[0] is not None else 0,
        "seed": int(config.seed),
        "classifiers": classifiers,
        "poolings": poolings,
        "sites": list(sites),
        "layer_specs": [spec.name for spec in specs],
        "cs": list(config.cs),
        "balanced": bool(config.balanced),
        "control": bool(config.control),
        "baseline_file": str(Path(config.baseline).resolve()) if config.baseline else None,
        "baseline_model": baseline_model if config.baseline else None,
        "jobs": workers,
        **solver_meta(device),
        "seconds": round(time.perf_counter() - started, 3),
        **{f"{k}_version": v for k, v in _versions().items()},
        "notes": list(notes),
    }
    meta["predictions_for"] = predictions_for
    meta.update(baseline_meta(config, path, kept, y, plan, specs, poolings, len(class_names)))  # sentence pairs
    meta["mdl"] = bool(config.mdl)
    meta["train_sizes"] = sizes
    result = ProbeResult(table, meta, notes=list(notes), predictions=prediction_table, curve=curve)
    if config.write:
        write_result(result, path, label, config.output)
    return result
