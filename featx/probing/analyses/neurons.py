"""``featx neurons``: which dimensions of a layer carry a label, and does the ranking hold up?

Two rankings of a layer's neurons, each fitted on training rows only (standardised by them):
- ``probe``: the elastic-net logistic probe of NeuroX (Dalvi et al. 2019): neurons by the summed
  absolute weight over classes (per class: by the class's weight minus the mean over classes);
- ``anova``: probe-free, the ANOVA F statistic of each neuron against the label.

Validation by selection: per training part, each ranking is refitted, and a logreg probe (its own C
search) is retrained on only the top, the bottom or a random k neurons (k = fraction x width; the random
baseline the mean of ``--draws`` draws, 10 by default) and scored on the test part, with the intervals of
``featx probe`` and a paired test of each top k against the random k (``neuron_selection``). With ``--group``, the
folds, the probes' holdouts that choose C and the intervals' resamples take whole groups, as ``featx probe
--group``'s.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ...checks import path_like, whole
from ...errors import InputError
from ...options import (
    Check,
    Options,
    Placeholder,
    keywords_of,
    option,
    overwrite_option,
    quiet_option,
    spoken,
    spoken_value,
)
from ...safe_files import atomic_write_text, refuse_existing, refuse_inputs
from ...selection import parse_layer_specs
from .. import evaluation as ev
from ..config import check_bootstrap, check_jobs
from ..inputs import open_complete
from ..prescan import require_finite_blocks
from ..results import check_name_length, check_prefix, json_safe, results_prefix, write_table
from ..shared_options import (
    bootstrap_option,
    check_folds,
    check_group,
    check_seed,
    folds_option,
    group_option,
    seed_option,
)
from ..tasks.pairs import refuse_separate_pairs
from .neuron_selection import RANDOM_DRAWS, RANKINGS, SELECTION_COLUMNS, how_tested, order, selection_curve
from .target import Task, load_task, positive, unit_fraction

WHAT, RANKING, EVALUATION = "Label, layers and pooling", "Ranking and output", "Evaluation"

FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2)
ELASTIC_C = 0.1  # inverse regularisation of the elastic-net ranking probe (standardised features)
L1_RATIO = 0.5


def _top_or_fraction(config: NeuronConfig) -> None:
    if config.top is not None and config.fraction is not None:
        top, fraction = (
            spoken_value(config, name, Placeholder(value)) for name, value in (("top", "N"), ("fraction", "F"))
        )
        raise InputError(
            f"give {spoken(config, 'top')} or {spoken(config, 'fraction')}, not both",
            f"{top} lists N neurons per ranking; {fraction} lists that share of the layer's width",
        )


@dataclass(frozen=True)
class NeuronConfig(Options):
    """Options of ``featx neurons``; frozen, checked when made."""

    features: str | Path
    label: str | None = option(
        None, flag="--label", group=WHAT, help="Label column (default: 'label', else the first one)."
    )
    layers: str = option(
        "all",
        flag="--layer",
        listed=True,
        group=WHAT,
        help="A layer (N), a list, or all (the selection curve per layer).",
    )
    pooling: str = option("mean", flag="--pooling", group=WHAT, help="Pooling whose vectors are ranked.")
    top: int | None = option(None, flag="--top", group=RANKING, help="Neurons listed per ranking (default 10).")
    fraction: float | None = option(
        None,
        flag="--fraction",
        group=RANKING,
        help="Or list this share of the layer's neurons, in (0, 1]; also added to the selection curve.",
    )
    folds: int = folds_option(EVALUATION)
    seed: int = seed_option(EVALUATION, "the random sets of neurons", "the elastic net's saga solver")
    draws: int = option(
        RANDOM_DRAWS,
        flag="--draws",
        group=EVALUATION,
        help="Random sets of k neurons drawn per training part; the random baseline is their mean accuracy.",
    )
    group: str | None = group_option(EVALUATION)
    output: str | Path | None = option(
        None,
        flag=("-o", "--output"),
        group=RANKING,
        kind="str",
        help="Results prefix (default: FEATURES stem + .LABEL.neurons).",
    )
    overwrite: bool = overwrite_option(RANKING, "existing results files (PREFIX.csv, .ranking.csv, .json, .png, .svg)")
    n_bootstrap: int = bootstrap_option(EVALUATION, also="The p vs random draws none: it is exact on a split.")
    jobs: int | None = option(
        None, flag="--jobs", group=EVALUATION, help="Parallel layer jobs (default: one per core)."
    )
    write: bool = True
    progress: bool = quiet_option(RANKING)

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("features", "output"),
        positive("top", "--top", optional=True, hint="give --top a number of neurons, e.g. 10"),
        unit_fraction("fraction", "--fraction"),
        _top_or_fraction,
        check_folds,
        check_seed,
        whole("draws", "--draws", hint="give --draws a whole number of random draws, e.g. 10 (the default) or 2"),
        check_bootstrap,
        check_jobs,
        check_group,
    )


@dataclass
class NeuronResult:
    ranking: pd.DataFrame  # per layer, one row per neuron: both scores and ranks
    selection: pd.DataFrame  # accuracy of probes on top / bottom / random neurons
    per_class: pd.DataFrame  # per layer and class, the top neurons of the probe ranking
    meta: dict
    paths: list[Path] = field(default_factory=list)
    prefix: Path | None = None  # PREFIX of the files written (featx.report adds the figure PREFIX.png)
    notes: list[str] = field(default_factory=list)  # what the CLI prints after the tables (also meta["notes"])


# -- rankings --------------------------------------------------------------------------------------
def elastic_net(Xs: np.ndarray, y: np.ndarray, seed: int):
    import sklearn
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    extra = {} if tuple(int(p) for p in sklearn.__version__.split(".")[:2]) >= (1, 8) else {"penalty": "elasticnet"}
    model = LogisticRegression(
        solver="saga", l1_ratio=L1_RATIO, C=ELASTIC_C, max_iter=300, tol=1e-3, random_state=seed, **extra
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(Xs, y)
    coef = model.coef_ if model.coef_.shape[0] > 1 else np.vstack([-model.coef_[0], model.coef_[0]]) / 2
    return coef - coef.mean(axis=0)  # (classes, neurons), each neuron's weights summing to 0 over classes


def rank_neurons(X: np.ndarray, y: np.ndarray, rows: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Scores per ranking (higher = more important) and the probe's per-class weights, from ``rows``."""
    from sklearn.feature_selection import f_classif

    scaler = ev.fit_scaler(X, rows)
    Xs = scaler(X[rows])
    weights = elastic_net(Xs, y[rows], seed)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        f_values = np.nan_to_num(f_classif(Xs, y[rows])[0], nan=0.0)
    return {"probe": np.abs(weights).sum(axis=0), "anova": f_values, "weights": weights}


# -- one layer -----------------------------------------------------------------------------------------
def _ranking_table(scores: dict, layer: int) -> pd.DataFrame:
    table = pd.DataFrame(
        {
            "layer": layer,
            "neuron": np.arange(len(scores["probe"])),
            "probe_score": scores["probe"],
            "anova_f": scores["anova"],
        }
    )
    for name, column in (("probe", "probe_rank"), ("anova", "anova_rank")):
        ranks = np.empty(len(table), dtype=np.int64)
        ranks[order(scores[name])] = np.arange(1, len(table) + 1)
        table[column] = ranks
    return table.sort_values("probe_rank").reset_index(drop=True)


def _per_class(weights: np.ndarray, task: Task, layer: int, listed: int) -> list[dict]:
    return [
        {
            "layer": layer,
            "class": name,
            "neurons": [int(n) for n in order(weights[c])[:listed]],
            "weights": [round(float(weights[c, n]), 4) for n in order(weights[c])[:listed]],
        }
        for c, name in enumerate(task.class_names)
    ]


def _run_layer(path: str, pooling: str, layer: int, task: Task, fractions, listed: int, config: NeuronConfig):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        with open_complete(path) as features:
            X = features.features(pooling, layer)[task.kept]
        scores = rank_neurons(X, task.y, task.training_rows(), config.seed)
        records = selection_curve(
            X,
            task,
            lambda rows, seed: rank_neurons(X, task.y, rows, seed),
            fractions,
            config.seed,
            config.n_bootstrap,
            config.draws,
        )
    for record in records:
        record.update(label=task.label, pooling=pooling, layer=layer, evaluation=task.plan.evaluation)
    return _ranking_table(scores, layer), records, _per_class(scores["weights"], task, layer, listed)


def _listed(config: NeuronConfig, width: int) -> tuple[int, tuple[float, ...]]:
    """Neurons listed per ranking, and the fractions of the selection curve (with ``--fraction``'s)."""
    if config.fraction is not None:
        share = float(config.fraction)
        return max(1, int(round(share * width))), tuple(sorted({*FRACTIONS, share}))
    top = int(config.top) if config.top is not None else 10
    return min(top, width), FRACTIONS


def _check_outputs(config: NeuronConfig, features, label: str) -> None:
    """``-o PREFIX`` names neither the features file nor the corpus it was extracted from (a user's file), and
    without ``--overwrite`` no file the run writes (the figure's included) exists already."""
    if not config.write:
        return
    prefix = results_prefix(features.path, label, "neurons", config.output)
    outputs = [Path(f"{prefix}{end}") for end in (".csv", ".ranking.csv", ".json", ".png", ".svg")]
    check_name_length(outputs)  # named after the label: "File name too long" came after every probe
    if config.output is not None:
        from ..inputs import read_files

        check_prefix(config.output, outputs[0])
        refuse_inputs(outputs, read_files(features))
    refuse_existing(outputs, config.overwrite)


@keywords_of(NeuronConfig)  # from Python, a message names the keyword given (top=0), the CLI the flag
def neurons(config: NeuronConfig | str | Path, **options) -> NeuronResult:
    """Rank and validate the neurons of the chosen layers; see ``NeuronConfig``."""
    config = NeuronConfig.build(config, **options)
    started = time.perf_counter()
    notes: list[str] = []
    with open_complete(config.features) as features:
        refuse_separate_pairs(features, "neurons")
        task = load_task(features, config.label, config.folds, config.seed, config.group, notes)
        _check_outputs(config, features, task.label)
        specs = parse_layer_specs(
            str(config.layers),
            features.layers,
            False,
            config=config,
            single_only="neurons ranks one layer's units at a time",
        )
        if config.pooling not in features.poolings:
            raise InputError(
                f"pooling '{config.pooling}' is not stored in {features.path}; stored: {', '.join(features.poolings)}",
                f"give {spoken(config, 'pooling')} one the file stores, e.g. "
                f"{spoken_value(config, 'pooling', features.poolings[0])}",
            )
        width, model = features.hidden_size, features.attrs.get("model")
    listed, fractions = _listed(config, width)
    layers = [spec.layers[0] for spec in specs]
    require_finite_blocks(config.features, [(config.pooling, layer) for layer in layers], as_probed=False)
    outputs = _run(config, task, layers, fractions, listed)
    ranking = pd.concat([table for table, _, _ in outputs], ignore_index=True)
    selection = pd.DataFrame([r for _, records, _ in outputs for r in records], columns=SELECTION_COLUMNS)
    per_class = pd.DataFrame([r for _, _, rows in outputs for r in rows])
    meta = {
        "features_file": str(Path(config.features).resolve()),
        "model": model,
        "label": task.label,
        "pooling": config.pooling,
        "layers": layers,
        "width": width,
        "listed": listed,
        "fractions": list(fractions),
        "classes": task.class_names,
        "evaluation": task.plan.evaluation,
        **task.group_meta(),
        "elastic_net": {"C": ELASTIC_C, "l1_ratio": L1_RATIO},
        "rankings": list(RANKINGS),
        "random_draws": config.draws,
        "test_vs_random": how_tested(task.plan),
        "n_bootstrap": config.n_bootstrap,
        "seed": config.seed,
        "notes": notes,
        "seconds": round(time.perf_counter() - started, 3),
    }
    result = NeuronResult(ranking, selection, per_class, meta, notes=notes)
    if config.write:
        result.paths = write_neurons(result, config.output)
    return result


def write_neurons(result: NeuronResult, output=None) -> list[Path]:
    """``PREFIX.csv`` (selection), ``PREFIX.ranking.csv`` and ``PREFIX.json``; the figure is the report's
    (``featx.report.save_neurons_figure``)."""
    prefix = result.prefix = results_prefix(result.meta["features_file"], result.meta["label"], "neurons", output)
    paths = [Path(f"{prefix}.csv"), Path(f"{prefix}.ranking.csv"), Path(f"{prefix}.json")]
    write_table(result.selection, paths[0])
    write_table(result.ranking, paths[1])
    payload = {"meta": result.meta, "selection": _records(result.selection), "per_class": _records(result.per_class)}
    atomic_write_text(paths[2], json.dumps(payload, default=json_safe, indent=1, allow_nan=False))
    return paths


def _records(table: pd.DataFrame) -> list[dict]:
    return [
        {key: json_safe(value) if not isinstance(value, list) else value for key, value in record.items()}
        for record in table.to_dict("records")
    ]


def _run(config: NeuronConfig, task: Task, layers: list[int], fractions, listed: int) -> list:
    from ...progress import progress_bar
    from ..inputs import job_workers, run_jobs

    jobs = [(str(config.features), config.pooling, layer, task, fractions, listed, config) for layer in layers]
    with progress_bar(total=len(jobs), unit="layer", disable=not config.progress, desc="neurons") as bar:
        return run_jobs(_run_layer, jobs, job_workers(config.jobs, len(jobs)), done=bar.update)
