"""Paired tests between two results files of the same rows (two models, or a model and its random-init
baseline), per layer, from their per-row predictions files (``X.predictions.csv``).

The tests are those featx uses between layers (``featx.probing.evaluation.significance``): with a fixed split
an exact paired randomisation test over the test rows (McNemar's exact test for accuracy, valid at every n),
the corrected resampled t-test over the same folds with cross-validation (the folds are rebuilt from the run's
seed and fold count, as the probe built them), Holm-adjusted over the layers of one comparison. A ``--group``
run's rows carry their group (the predictions file's ``group`` column): its folds are rebuilt by whole groups
and its paired test flips (or swaps) whole groups, as the probe's did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import parse_whole
from ..io import read_csv
from ..probing import SIGNIFICANCE_ALPHA, holm, run_groups, run_plan
from ..safe_files import sibling

N_BOOT = 2000
WORD_LEVELS = ("word", "arc")  # a results file's ``level`` whose items are words of sentences


def predictions_path(meta: dict) -> Path | None:
    """The per-row predictions file beside a results file, if the run wrote one and it still exists."""
    results = meta.get("results_path")
    name = meta.get("predictions_file")
    if not results or not name:
        return None
    path = sibling(Path(results), name)
    return path if path is not None and path.exists() else None


def same_rows(meta_a: dict, meta_b: dict) -> bool | None:
    """Whether two runs scored the same rows by their tested rows' digests (``rows_sha256``: the rows' texts or
    words and labels, whatever the files' names); None when either run has none (a results file of an older featx)."""
    a, b = meta_a.get("rows_sha256"), meta_b.get("rows_sha256")
    return None if not a or not b else a == b


def why_not_paired(meta_a: dict, meta_b: dict) -> str | None:
    """Why two runs cannot be tested row by row (None when they can). Runs that record their tested rows'
    digest are paired on it alone, with the same evaluation (and, under cross-validation, the same folds);
    older runs on their label column, row count and corpus."""
    same = same_rows(meta_a, meta_b)
    if same is not None:
        return _why_not_same_rows(meta_a, meta_b, same)
    for key, what in (
        ("label", "label column"),
        ("evaluation", "evaluation"),
        ("group", "group column"),
        ("seed", "seed"),
        ("folds", "folds"),
        ("n_rows", "row count"),
    ):
        if meta_a.get(key) != meta_b.get(key):
            return f"different {what} ({meta_a.get(key)} vs {meta_b.get(key)})"
    if (
        meta_a.get("corpus_sha256")
        and meta_b.get("corpus_sha256")
        and meta_a["corpus_sha256"] != meta_b["corpus_sha256"]
    ):
        return "different corpora"
    if predictions_path(meta_a) is None or predictions_path(meta_b) is None:
        return "no per-row predictions file beside the results"
    return None


def _why_not_same_rows(meta_a: dict, meta_b: dict, same: bool) -> str | None:
    if not same:
        return "the tested rows differ (their texts, words or labels; rows_sha256 differs)"
    keys = [("evaluation", "evaluation"), ("group", "group column")]  # --group: the folds and resamples' unit
    if meta_a.get("evaluation") != "split":  # cross-validation: the folds are drawn from the seed and fold count
        keys += [("seed", "seed"), ("folds", "folds")]
    for key, what in keys:
        if meta_a.get(key) != meta_b.get(key):
            return f"different {what} ({meta_a.get(key)} vs {meta_b.get(key)})"
    if predictions_path(meta_a) is None or predictions_path(meta_b) is None:
        return "no per-row predictions file beside the results"
    return None


def _layer_columns(frame: pd.DataFrame) -> dict[int, str]:
    out = {}
    for column in frame.columns:  # a predictions file's header, as anyone wrote it: 'layer_²' is no layer
        layer = parse_whole(column.removeprefix("layer_"), signed=True) if str(column).startswith("layer_") else None
        if layer is not None:
            out[layer] = column
    return out


def _coded(a: pd.DataFrame, meta: dict, regression: bool):
    """The labels as the probe scored them (numbers, or class codes 0..k-1) and how to read a predictions column."""
    if regression:
        return a["label"].astype(float).to_numpy(), None, lambda column: column.astype(float).to_numpy()
    names = [str(name) for name in (meta.get("label_names") or sorted(set(a["label"])))]
    code = {name: index for index, name in enumerate(names)}
    return (
        np.array([code.get(value, -1) for value in a["label"]]),
        names,
        lambda column: np.array([code.get(value, -1) for value in column]),
    )


def _paired_inputs(meta_a: dict, meta_b: dict, metric: str):
    """The two runs' predictions tables, the coded labels, how to read a column, the scoring, the folds and the
    tested rows."""
    from ..probing import REGRESSION_METRICS, Scoring

    a = read_csv(predictions_path(meta_a), dtype=str, keep_default_na=False)
    b = read_csv(predictions_path(meta_b), dtype=str, keep_default_na=False)
    rows_differ = len(a) != len(b) if same_rows(meta_a, meta_b) else list(a["row"]) != list(b["row"])
    if rows_differ or list(a["label"]) != list(b["label"]):
        raise ValueError("the two predictions files do not hold the same rows with the same labels")
    y, names, read = _coded(a, meta_a, metric in REGRESSION_METRICS)
    if names is not None and (y < 0).any():
        raise ValueError("a label of the predictions file is not among the run's classes")
    sentences = a["row"].astype(int).to_numpy() if meta_a.get("level") in WORD_LEVELS else None
    plan = run_plan(meta_a, y, names, sentences, run_groups(meta_a, a))
    tested = plan.folds[0][1] if plan.is_split else np.arange(len(y))
    return a, b, y, names, read, Scoring(metric, len(names or ())), plan, tested


def paired_test_at(meta_a: dict, layer_a: int, meta_b: dict, layer_b: int, metric: str = "accuracy") -> dict:
    """Run a at ``layer_a`` against run b at ``layer_b`` on the same rows (two models, each at its chosen layer):
    ``score_a``, ``score_b`` and p, the paired test of ``metric`` featx uses between layers (unadjusted)."""
    a, b, y, names, read, scoring, plan, tested = _paired_inputs(meta_a, meta_b, metric)
    column_a, column_b = _layer_columns(a).get(int(layer_a)), _layer_columns(b).get(int(layer_b))
    if column_a is None or column_b is None:
        raise ValueError(f"no predictions at layer {layer_a if column_a is None else layer_b}")
    pred_a, pred_b = read(a[column_a]), read(b[column_b])
    if names is not None and ((pred_a < 0).any() or (pred_b < 0).any()):
        raise ValueError("a prediction is not among the run's classes")
    score_a, score_b = (scoring.value(y[tested], pred[tested]) for pred in (pred_a, pred_b))
    p = scoring.p_value(plan, y, pred_a, pred_b, N_BOOT, int(meta_a.get("seed") or 0))
    return {"score_a": score_a, "score_b": score_b, "p": p}


def depth_pairs(layers_a: Iterable[int], n_a: int, layers_b: Iterable[int], n_b: int) -> list[tuple[int, int]]:
    """The predicted layers of a and b at the same relative depth (layer / the model's top layer, the x of
    ``--relative-depth``): each layer of the model with fewer layers beside the other model's layer nearest its
    depth (ties: the lower one), at exactly its depth where the other has one (6 vs 2 layers: 0-0, 3-1, 6-2);
    a layer whose counterpart has no predictions is left out. Equal depths pair layer by layer."""
    a, b = sorted(set(layers_a)), sorted(set(layers_b))
    if n_a == n_b:
        return [(layer, layer) for layer in a if layer in b]
    few, many, n_few, n_many = (a, b, n_a, n_b) if n_a < n_b else (b, a, n_b, n_a)
    nearest = {layer: math.ceil(layer * n_many / n_few - 0.5) for layer in few}
    pairs = [(layer, other) for layer, other in nearest.items() if other in many]
    return pairs if n_a < n_b else [(mine, theirs) for theirs, mine in pairs]


def paired_layer_tests(
    meta_a: dict,
    meta_b: dict,
    alpha: float = SIGNIFICANCE_ALPHA,
    metric: str = "accuracy",
    depths: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Per pair of layers (each common layer with itself; with ``depths``, the two models' top layers, the
    predicted layers at the same relative depth: ``depth_pairs``): ``metric`` of a at ``layer`` and b at
    ``layer_b`` on the same rows (``score_a``, ``score_b``), p (the paired test of that metric, as between
    layers), Holm-adjusted p, significant."""
    a, b, y, names, read, scoring, plan, tested = _paired_inputs(meta_a, meta_b, metric)
    columns_a, columns_b = _layer_columns(a), _layer_columns(b)
    if depths is None:
        paired = [(layer, layer) for layer in sorted(set(columns_a) & set(columns_b))]
    else:
        paired = depth_pairs(columns_a, depths[0], columns_b, depths[1])
    records = []
    for layer, layer_b in paired:
        pred_a, pred_b = read(a[columns_a[layer]]), read(b[columns_b[layer_b]])
        if names is not None and ((pred_a < 0).any() or (pred_b < 0).any()):
            raise ValueError(f"layer {layer}: a prediction is not among the run's classes")
        score_a, score_b = (scoring.value(y[tested], pred[tested]) for pred in (pred_a, pred_b))
        p = scoring.p_value(plan, y, pred_a, pred_b, N_BOOT, int(meta_a.get("seed") or 0))
        records.append({"layer": layer, "layer_b": layer_b, "score_a": score_a, "score_b": score_b, "p": p})
    table = pd.DataFrame.from_records(records, columns=["layer", "layer_b", "score_a", "score_b", "p"])
    table["difference"] = table["score_a"] - table["score_b"]
    table["p_holm"] = holm(table["p"].to_numpy()) if len(table) else []
    table["significant"] = [bool(p < alpha) if not math.isnan(p) else False for p in table["p_holm"]]
    table["metric"] = metric
    table["tested"] = f"{meta_a.get('predictions_for', '?')} vs {meta_b.get('predictions_for', '?')}"
    return table
