"""The baseline line of ``featx explain``: the majority class beside its accuracy, the training mean beside its
R², on the rows of the predictions file.

A split run's predictions hold its test rows only, and the results table's reference row (``majority``, ``train
mean``) was scored on those same rows: it is printed as it is. A k-fold run's predictions hold every row once,
out of fold; explain's own scores are pooled over them, so the baseline is pooled the same way: the folds are
drawn again from the run's seed, fold count and groups (``run_plan``, as ``featx compare`` draws them), and each
fold's training majority (or training mean) predicts its test rows. When the folds cannot be drawn again, the
results table's mean over folds is printed, and labelled so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import FeatxError, StoreError
from ...io import read_csv
from ..evaluation import baseline_guess
from ..evaluation import regression_metrics as rm
from ..results import load_results
from ..tasks.redraw import run_groups, run_plan

WORD_LEVELS = ("word", "arc")


def _table_value(results: Path | None, spec: str, metric: str) -> float | None:
    """The results table's reference row's ``metric`` (the row whose ``layer_spec`` is ``spec``)."""
    if results is None or not results.exists():
        return None
    try:
        table, _ = load_results(results)
    except StoreError:
        return None
    rows = table[table["layer_spec"].astype(str) == spec]
    if "features" in rows:
        rows = rows[rows["features"].astype(str) == "main"]
    value = float(rows[metric].iloc[0]) if len(rows) and metric in rows else float("nan")
    return None if np.isnan(value) else value


def _plan(meta: dict, frame: pd.DataFrame, y: np.ndarray, names: list[str] | None):
    sentences = frame["row"].astype(int).to_numpy() if meta.get("level") in WORD_LEVELS else None
    return run_plan(meta, y, names, sentences, run_groups(meta, frame))


def pooled_majority(meta: dict, path: Path) -> float:
    """Each fold's training-majority class as the prediction of its test rows, accuracy pooled over every row."""
    frame = read_csv(path, dtype=str, keep_default_na=False)
    names = [str(name) for name in (meta.get("label_names") or sorted(set(frame["label"])))]
    code = {name: index for index, name in enumerate(names)}
    y = np.array([code.get(value, -1) for value in frame["label"]])
    if (y < 0).any():
        raise ValueError("a label of the predictions file is not among the run's classes")
    hits = 0
    for train, test in _plan(meta, frame, y, names).folds:
        hits += int((y[test] == baseline_guess(y, train, test, len(names))).sum())
    return hits / len(y)


def pooled_mean_r2(meta: dict, path: Path) -> float:
    """Each fold's training mean as the prediction of its test rows, R² pooled over every row."""
    frame = read_csv(path, dtype=str, keep_default_na=False)
    y = frame["label"].astype(float).to_numpy()
    predicted = np.empty_like(y)
    for train, test in _plan(meta, frame, y, None).folds:
        predicted[test] = baseline_guess(y, train, test)
    return float(rm.metrics(y, predicted[None, :])["r2"][0])


def baseline_line(meta: dict, path: Path, results: Path | None, regression: bool) -> str:
    """The line printed under explain's scores: the baseline on the same rows, and where it comes from."""
    what, metric = ("the training mean's R²", "r2") if regression else ("majority class accuracy", "accuracy")
    spec = "train mean" if regression else "majority"
    why = "the run's evaluation is not recorded"
    if meta.get("evaluation") not in (None, "split"):
        try:
            value = (pooled_mean_r2 if regression else pooled_majority)(meta, path)
        except (ValueError, KeyError, OSError, FeatxError) as err:
            why = str(err).splitlines()[0]
        else:
            return (
                f"baseline: {what} {value:.3f} (each fold's training part fitted it, pooled over the out-of-fold "
                "rows as the scores above; the results table's figure is a mean over folds, so it differs slightly)"
            )
    row = _table_value(results, spec, metric)
    if row is None:
        return f"baseline: none found (the results table beside the predictions gives no {spec} row)"
    if meta.get("evaluation") == "split":
        return f"baseline: {what} {row:.3f} (the results table's {spec} row, on these same test rows)"
    return (
        f"baseline: {what} {row:.3f} (the results table's mean over folds, not pooled as the scores above: "
        f"the folds could not be drawn again: {why})"
    )
