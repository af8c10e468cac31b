"""``featx probe --sweep``: per layer, a family of probes of increasing complexity (Pareto probing).

Pimentel et al. (2020) "Pareto probing": report accuracy against probe complexity, not one number.
Per layer and pooling, on the same evaluation plan as ``featx probe`` (the scaler and early stopping
fitted on training parts only), and each also on the control task (permuted labels; Hewitt & Liang):

- ``logreg`` at every C of the grid (no search: the C is the setting), parameters (d + 1) x classes;
- ``rank``: a rank-r linear probe ``W = A B`` (d x r, r x classes; torch, early-stopped), r = 1, 2, 4,
  ... below classes - 1 (a softmax over k classes has rank k - 1 at most, which is the full probe);
- ``mlp``: dense -> ReLU -> dropout -> dense of widths 4, 16, 64, 256.

The complexity measure is the parameter count (plus the rank for linear probes). Every row also has a
``selection_score``: the accuracy on the held-out part of each training part (the inner holdout, or the dev
rows of a split), averaged over the outer folds, from the fits the sweep makes anyway (a logreg's C path at its
one C on the rest of the training part, a torch probe trained on the rest and early-stopped there), as
``featx probe``'s rows have. The printout's best probe, best layer and reference C are chosen on it, never on
the test rows (``featx.report.format_sweep``). With ``--group``, the
folds, every holdout of a training part (the logreg probes' and the early stopping's) and the intervals'
resamples take whole groups, as ``featx probe --group``'s. With ``--labels FILE`` (and ``--join``), the label
probed (and a ``--group`` column the features file lacks) comes from that file, joined to the stored rows by
``featx probe --labels``'s own code (``load_task``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ...checks import path_like
from ...errors import InputError
from ...options import Check, Options, keywords_of, on_command_line, option_of
from ...safe_files import atomic_write_text
from ...selection import parse_layer_specs, parse_poolings
from .. import evaluation as ev
from ..config import DEFAULT_CS, ProbeConfig, check_bootstrap, check_jobs, check_labels_file
from ..inputs import open_complete
from ..prescan import require_finite_blocks
from ..results import check_name_length, check_prefix, json_safe, results_prefix, write_table
from ..shared_options import check_folds, check_group, check_join, check_join_needs_labels, check_seed
from ..solvers import classifiers as clf
from ..tasks.pairs import pooled_block
from ..tasks.sentences import permuted_control
from .target import Task, load_task

RANKS = (1, 2, 4, 8, 16, 32)
WIDTHS = (4, 16, 64, 256)
TORCH_LR = 1e-2  # Adam step of the rank and MLP probes (early-stopped on a holdout of the training part)
COLUMNS = [
    "label",
    "pooling",
    "layer",
    "task",
    "family",
    "setting",
    "params",
    "rank",
    "C",
    "width",
    "accuracy",
    "accuracy_low",
    "accuracy_high",
    "macro_f1",
    "selection_score",  # accuracy on each training part's held-out rows, mean over folds: what the picks use
    "evaluation",
]


@dataclass
class SweepResult:
    table: pd.DataFrame
    meta: dict
    paths: list[Path] = field(default_factory=list)
    prefix: Path | None = None  # PREFIX of the files written (featx.report adds the Pareto figures)


@dataclass
class _Probe:
    family: str
    setting: str
    params: int
    rank: float = float("nan")
    C: float = float("nan")
    width: float = float("nan")


def probe_family(d: int, k: int, cs=DEFAULT_CS) -> list[_Probe]:
    """The probes of the sweep for d inputs and k classes, in increasing complexity per family."""
    full_rank = max(1, k - 1)
    outputs = k if k > 2 else 1  # a binary logreg has one weight vector
    probes = [_Probe("logreg", f"C={c:g}", (d + 1) * outputs, full_rank, float(c)) for c in sorted(cs)]
    probes += [_Probe("rank", f"rank={r}", d * r + r * k + k, r) for r in RANKS if r < full_rank]
    probes += [_Probe("mlp", f"width={w}", d * w + w + w * k + k, width=w) for w in WIDTHS]
    return probes


def _low_rank(d: int, r: int, k: int):
    import torch

    return torch.nn.Sequential(torch.nn.Linear(d, r, bias=False), torch.nn.Linear(r, k))


def _fit_torch(probe: _Probe, Xs, y, train, test, dev, k, seed, groups=None) -> ev.FoldResult:
    """A rank or MLP probe trained on the training part less its holdout (or on all of it, with dev rows) and
    early-stopped on that holdout: its test predictions, and its predictions of the holdout (``validation``)."""
    import torch

    fit_rows, val_rows = (train, dev) if dev is not None else ev.inner_split(y, train, seed, groups)
    torch.manual_seed(seed)
    d = Xs.shape[1]
    model = _low_rank(d, int(probe.rank), k) if probe.family == "rank" else clf.build_mlp(d, k, hidden=int(probe.width))
    inputs = lambda rows: Xs[rows]  # noqa: E731
    clf.train_head(model, inputs, y, fit_rows, val_rows, k, seed, lr=TORCH_LR, max_epochs=200, patience=10)
    held_out = clf.head_scores(model, inputs, val_rows).argmax(axis=1)
    return ev.FoldResult(clf.head_scores(model, inputs, test).argmax(axis=1), validation=(val_rows, held_out))


def _fold(X, labels, probes, train, test, dev, k, seed, groups=None) -> dict[tuple[int, str], ev.FoldResult]:
    """Every probe for every label vector (0 = real, 1 = control) on one fold: its test predictions and those of
    the held-out part of the training part (``validation``: a logreg's inner holdout, drawn even for its one C and
    scored by the C path's fit on the rest; a torch probe's early-stopping holdout; or the dev rows); ``groups``
    (``--group``: the group of every row), the holdouts of the training part take whole groups."""
    import torch

    out = {}
    for probe in probes:
        if probe.family == "logreg":
            results = ev.run_linear_tasks("logreg", X, labels, train, test, dev, k, (probe.C,), False, seed, groups)
            for t, result in enumerate(results):
                out[(t, probe.setting)] = result
    scaler = ev.fit_scaler(X, train)
    Xs = torch.from_numpy(np.ascontiguousarray(scaler(X)))
    for probe in probes:
        if probe.family != "logreg":
            for t, y in enumerate(labels):
                out[(t, probe.setting)] = _fit_torch(probe, Xs, y, train, test, dev, k, seed, groups)
    return out


def sweep_layer(path: str, pooling: str, layer: int, task: Task, y_control, seed: int, n_boot: int) -> list[dict]:
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            with open_complete(path) as features:
                X = pooled_block(features, pooling, layer)[task.kept]  # a separate-mode pair: [u, v, |u-v|, u*v]
            probes = probe_family(X.shape[1], task.n_classes)
            labels = [task.y] + ([y_control] if y_control is not None else [])
            folds = [
                _fold(X, labels, probes, train, test, dev, task.n_classes, seed + 1000 * i, task.plan.groups)
                for i, ((train, test), dev) in enumerate(zip(task.plan.folds, task.plan.dev, strict=False))
            ]
    finally:
        torch.set_num_threads(threads)
    records = []
    scoring = ev.Scoring("accuracy", task.n_classes)
    for t, name in enumerate(["real", "control"][: len(labels)]):
        for probe in probes:
            results = [fold[(t, probe.setting)] for fold in folds]
            row = ev.summarise(task.plan, labels[t], results, task.n_classes, n_boot, seed)
            records.append(
                {
                    "label": task.label,
                    "pooling": pooling,
                    "layer": layer,
                    "task": name,
                    "family": probe.family,
                    "setting": probe.setting,
                    "params": probe.params,
                    "rank": probe.rank,
                    "C": probe.C,
                    "width": probe.width,
                    **{key: row[key] for key in ("accuracy", "accuracy_low", "accuracy_high", "macro_f1")},
                    "selection_score": scoring.selection(labels[t], results),
                    "evaluation": task.plan.evaluation,
                }
            )
    return records


def _check_features(config: SweepConfig) -> None:
    if config.features is None:
        if on_command_line():
            raise InputError("featx probe --sweep needs the features file", "featx probe FEATURES.h5 --sweep")
        raise InputError("featx.probing.sweep needs the features file", "featx.probing.sweep('features.h5', ...)")


@dataclass(frozen=True)
class SweepConfig(Options):
    """Options of ``featx probe --sweep``; frozen, checked when made. ``poolings`` None or ``all``: mean
    pooling (the sweep is many probes per layer); name poolings to sweep several."""

    features: str | Path | None
    # featx probe's options, with its flags (option_of): the shared rules refuse layers='' or output='' as probe's
    label: str | None = option_of(ProbeConfig, "label")
    labels: str | Path | None = option_of(ProbeConfig, "labels")  # a file of label columns joined to the stored rows
    join: str = option_of(ProbeConfig, "join")
    layers: str = option_of(ProbeConfig, "layers")
    poolings: str | None = option_of(ProbeConfig, "poolings", None)  # None: mean (see the docstring)
    folds: int = option_of(ProbeConfig, "folds")
    seed: int = option_of(ProbeConfig, "seed")
    group: str | None = option_of(ProbeConfig, "group")
    control: bool = option_of(ProbeConfig, "control")  # also every probe on the control task (permuted labels)
    jobs: int | None = option_of(ProbeConfig, "jobs")
    output: str | Path | None = option_of(ProbeConfig, "output")  # results prefix (default: beside the features file)
    n_bootstrap: int = 1000
    write: bool = True

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        _check_features,
        path_like("labels"),
        check_labels_file,
        check_join,
        check_join_needs_labels,
        check_folds,
        check_seed,
        check_bootstrap,
        check_jobs,
        check_group,
    )


def _sweep_jobs(config: SweepConfig, notes: list[str]) -> tuple[Task, list[tuple], dict]:
    """The task, one job per (pooling, layer), and what the meta records of the file."""
    with open_complete(str(config.features)) as file:
        task = load_task(file, config.label, config.folds, config.seed, config.group, notes, config.labels, config.join)
        specs = parse_layer_specs(
            str(config.layers),
            file.layers,
            False,
            config=config,
            single_only=f"{'--sweep' if on_command_line() else 'featx.probing.sweep'} probes single layers only",
        )
        poolings = config.poolings
        if poolings is None or poolings == "all":  # one pooling unless asked: the sweep is many probes per layer
            poolings = "mean" if "mean" in file.poolings else file.poolings[0]
        chosen = parse_poolings(poolings, file.poolings)
        model = file.attrs.get("model")
    if config.write:  # as write_sweep and the Pareto figures name them, checked before the probes
        prefix = sweep_prefix(Path(str(config.features)).resolve(), task.label, config.output)
        if config.output is not None:
            check_prefix(config.output, Path(f"{prefix}.csv"))
        figures = [f".{pooling}.svg" for pooling in chosen] if len(chosen) > 1 else [".svg"]
        check_name_length(Path(f"{prefix}{end}") for end in (".csv", ".json", *figures))
    seed = config.seed
    y_control = permuted_control(task.y, seed) if config.control else None  # probe's and fit's control labels
    jobs = [
        (str(config.features), pooling, spec.layers[0], task, y_control, seed, config.n_bootstrap)
        for pooling in chosen
        for spec in specs
    ]
    require_finite_blocks(str(config.features), [(pooling, layer) for _, pooling, layer, *_ in jobs])
    return task, jobs, {"model": model, "layers": [spec.layers[0] for spec in specs], "poolings": chosen}


@keywords_of(ProbeConfig)  # featx probe's flags (SweepConfig shares some): from Python the keyword given, group='x'
def sweep(config: SweepConfig | str | Path | None, **options) -> SweepResult:
    """The probe-complexity sweep of one label column over the chosen layers and poolings; see
    ``SweepConfig`` (``sweep("x.h5", label="pos", layers="0,6")``)."""
    config = SweepConfig.build(config, **options)
    started = time.perf_counter()
    notes: list[str] = []
    task, jobs_list, info = _sweep_jobs(config, notes)
    table = pd.DataFrame([r for records in _run(jobs_list, config.jobs) for r in records], columns=COLUMNS)
    meta = {
        "features_file": str(Path(str(config.features)).resolve()),
        "model": info["model"],
        "label": task.label,
        **({"labels_file": str(config.labels), "join": config.join} if config.labels is not None else {}),
        "layers": info["layers"],
        "poolings": info["poolings"],
        "classes": task.class_names,
        "evaluation": task.plan.evaluation,
        **task.group_meta(),
        "seed": config.seed,
        "n_bootstrap": config.n_bootstrap,  # the resamples of a split's intervals
        "control": config.control,
        "cs": list(DEFAULT_CS),
        "ranks": list(RANKS),
        "widths": list(WIDTHS),
        "seconds": round(time.perf_counter() - started, 3),
        "notes": notes,
    }
    result = SweepResult(table, meta)
    if config.write:
        result.paths = write_sweep(result, config.output)
    return result


def sweep_prefix(features_file: Path, label: str, output=None) -> Path:
    """Where a sweep's files go: ``<features stem>.<label>.sweep``, or ``-o PREFIX`` (probe's too) + ``.sweep``."""
    prefix = results_prefix(features_file, label, "sweep", output)
    return Path(str(prefix) + ".sweep") if output is not None else prefix


def write_sweep(result: SweepResult, output=None) -> list[Path]:
    """``PREFIX.csv`` and ``PREFIX.json``; the Pareto figures are the report's (``featx.report.save_sweep_figures``)."""
    prefix = result.prefix = sweep_prefix(result.meta["features_file"], result.meta["label"], output)
    csv_path, json_path = Path(f"{prefix}.csv"), Path(f"{prefix}.json")
    write_table(result.table, csv_path)
    records = [{key: json_safe(value) for key, value in record.items()} for record in result.table.to_dict("records")]
    atomic_write_text(
        json_path, json.dumps({"meta": result.meta, "results": records}, default=json_safe, indent=1, allow_nan=False)
    )
    return [csv_path, json_path]


# What ``featx probe --sweep`` takes of the probe command's options; any other set to a value of its own is refused
# (the sweep would otherwise run without it, silently), except a bar, a baseline it has not, and --device/--task
# (checked first: the CPU, classification).
SWEEP_OPTIONS = (
    *("label", "labels", "join", "layers", "poolings", "folds", "seed", "group", "jobs", "output", "n_bootstrap"),
    "write",
)
NO_EFFECT = ("progress", "lexical", "device", "task")


def _not_taken(options: dict) -> list[str]:
    """The flags of the probe options in ``options`` that the sweep does not use and that differ from probe's
    defaults (an unknown keyword is named as it was given)."""
    from dataclasses import MISSING, fields

    from ...options import flag_of
    from ..config import ProbeConfig

    known = {item.name: item for item in fields(ProbeConfig)}
    names = []
    for name, value in options.items():
        item = known.get(name)
        if name in SWEEP_OPTIONS or name in NO_EFFECT:
            continue
        if item is None or item.default is MISSING or value != item.default:
            spec = None if item is None else flag_of(item)
            names.append(spec.name if spec is not None else name)
    return names


def from_probe_options(features, control: bool, options: dict) -> SweepResult:
    """``featx probe --sweep``: the sweep with the probe command's options, refusing those it does not use."""
    if str(options.get("device") or "auto").strip().lower() not in ("auto", "cpu"):
        raise InputError(
            f"--sweep runs on the CPU; it does not take --device {options['device']}",
            "leave --device out, or run featx probe without --sweep to solve logreg probes on the GPU",
        )
    if str(options.get("task") or "auto").lower() == "regression":
        raise InputError(
            "--sweep is classification-only: it has no regression probes yet",
            "run featx probe --task regression without --sweep",
        )
    clash = _not_taken(options)
    if clash:
        raise InputError(
            f"--sweep runs its own family of probes on the hidden states; it does not take {', '.join(clash)}",
            "run featx probe without --sweep for those",
        )
    taken = {key: options[key] for key in SWEEP_OPTIONS if key in options}
    return sweep(SweepConfig(features, control=control, **taken))


def _run(jobs_list: list, jobs: int | None) -> list:
    from ..inputs import job_workers, run_jobs

    return run_jobs(sweep_layer, jobs_list, job_workers(jobs, len(jobs_list)))
