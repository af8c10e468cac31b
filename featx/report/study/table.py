"""The study report's data side: the study's tidy results table made uniform (``tidy``), the row shown for each
metric x pooling x model x task (``pick_rows``), each model's layer curve (``curve``) and Tenney et al.'s
expected layer (``expected_layer``). Pure pandas: no figure, no HTML."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import InputError
from ...options import on_command_line

__all__ = [
    "LOWER_IS_BETTER",
    "REQUIRED",
    "StudyView",
    "better",
    "curves_of",
    "expected_layer",
    "pick_rows",
    "run_study_first",
    "tidy",
    "view",
]

REQUIRED = ("model", "corpus", "label", "layer", "score")
# Metrics where a smaller value is the better one (an error, a code length); every other metric: larger is better.
LOWER_IS_BETTER = frozenset({"mae", "mse", "rmse", "loss", "log_loss", "mdl", "codelength", "online_codelength"})
NO_POOLING = "(none)"
NUMERIC = (
    *("layer", "n_layers", "relative_depth", "score", "ci_low", "ci_high", "selection_score", "seed"),
    *("majority", "lexical", "control", "selectivity"),
)


def run_study_first() -> str:
    """The hint of a study with no results yet, naming ``featx study run`` on the command line and
    ``featx.study.run`` from Python: the study report here and ``featx.study.load`` share this one phrase."""
    run = "featx study run STUDY.toml" if on_command_line() else "featx.study.run('study.toml')"
    return f"run the study first: {run}"


def better(metric: str) -> int:
    """+1 when a larger ``metric`` is better, -1 when a smaller one is."""
    return -1 if metric in LOWER_IS_BETTER else 1


def _text(values: pd.Series, missing: str) -> pd.Series:
    return values.map(
        lambda v: missing if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v)
    )


def _flag(values: pd.Series) -> pd.Series:
    return values.map(
        lambda v: False if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else bool(v)
    )


def _model_keys(frame: pd.DataFrame) -> pd.Series:
    """The model as the report names it: its name, plus ``· seed N`` where one model has several seeds."""
    seeds = frame.groupby("model")["seed"].nunique(dropna=True)
    several = frame["model"].map(seeds).fillna(0) > 1
    suffix = frame["seed"].map(lambda s: "" if pd.isna(s) else f" · seed {int(s)}")
    return frame["model"] + suffix.where(several, "")


def tidy(table) -> pd.DataFrame:
    """The study table with every column the report reads, uniform: numbers as floats (NaN where missing),
    text as text, ``chosen``/``random_init`` as booleans, plus ``model_key``, ``task`` (corpus · label) and
    ``depth`` (relative_depth, else layer / n_layers, else layer / the model's deepest layer)."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(
            f"the study report needs the study's results table as a pandas DataFrame, not {type(table).__name__}",
            "pass featx.study.load(OUTPUT)",
        )
    missing = [column for column in REQUIRED if column not in table.columns]
    if missing:
        raise InputError(
            f"the study table has no {', '.join(missing)} column{'s' if len(missing) > 1 else ''}",
            f"the report needs {', '.join(REQUIRED)}: pass the table featx.study.load(OUTPUT) returns",
        )
    frame = table.reset_index(drop=True).copy()
    for column in NUMERIC:
        source = frame[column] if column in frame.columns else pd.Series(np.nan, index=frame.index)
        frame[column] = pd.to_numeric(source, errors="coerce").astype(float)
    for column, missing_text in (("model", "?"), ("corpus", "?"), ("label", "?"), ("metric", "score")):
        frame[column] = _text(
            frame[column] if column in frame.columns else pd.Series(None, index=frame.index), missing_text
        )
    frame["pooling"] = _text(frame.get("pooling", pd.Series(None, index=frame.index)), NO_POOLING)
    frame["classifier"] = _text(frame.get("classifier", pd.Series(None, index=frame.index)), "")
    for column in ("chosen", "random_init"):
        frame[column] = _flag(frame.get(column, pd.Series(False, index=frame.index)))
    frame = frame[frame["score"].notna()].reset_index(drop=True)
    if frame.empty:
        raise InputError("the study table has no row with a score", run_study_first())
    frame["model_key"] = _model_keys(frame)
    frame["task"] = frame["corpus"] + " · " + frame["label"]
    deepest = frame.groupby("model_key")["layer"].transform("max").replace(0, np.nan)
    depth = frame["layer"] / frame["n_layers"].where(frame["n_layers"] > 0)
    frame["depth"] = frame["relative_depth"].fillna(depth).fillna(frame["layer"] / deepest)
    frame["n_layers"] = frame["n_layers"].fillna(deepest)
    return frame


CELL = ["metric", "pooling", "model_key", "task"]
HOW = ("best on the test rows", "best selection score", "chosen on the training part")


def pick_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per metric x pooling x model x task: the study's chosen row where it is in that slice, else the
    row with the best selection score, else the best test score (ties: the lower layer); ``how`` says which."""
    sign = frame["metric"].map(better)
    has_chosen = frame.groupby(CELL, sort=False)["chosen"].transform("any")
    has_selection = frame.groupby(CELL, sort=False)["selection_score"].transform("count") > 0
    value = sign * frame["selection_score"].where(has_selection, frame["score"])
    ranked = frame.assign(_chosen=frame["chosen"], _value=value.fillna(-np.inf), _order=np.arange(len(frame)))
    ranked = ranked.sort_values(
        [*CELL, "_chosen", "_value", "layer", "_order"], ascending=[True] * 4 + [False, False, True, True]
    )
    first = ranked.groupby(CELL, sort=False).head(1).sort_values("_order")
    level = np.where(has_chosen[first.index], 2, np.where(has_selection[first.index], 1, 0))
    return (
        first.drop(columns=["_chosen", "_value", "_order"]).assign(how=[HOW[i] for i in level]).reset_index(drop=True)
    )


def curves_of(frame: pd.DataFrame) -> dict[tuple, list[dict]]:
    """Every layer curve in the table: (metric, pooling, model_key, task, classifier) -> its rows with a layer
    (as dicts), one per layer, by layer."""
    curves: dict[tuple, list[dict]] = {}
    for record in frame[frame["layer"].notna()].sort_values("layer", kind="stable").to_dict("records"):
        points = curves.setdefault(tuple(record[column] for column in (*CELL, "classifier")), [])
        if not points or points[-1]["layer"] != record["layer"]:
            points.append(record)
    return curves


def expected_layer(layers, scores, metric: str = "score") -> float:
    """Tenney et al. (2019)'s expected layer, E[l] = sum l * delta(l) / sum delta(l) over l = 1..L, where
    delta(l) = s(l) - s(l-1) is the gain of layer l on the curve s made cumulative (s(l) = the best score of
    layers 0..l, as Tenney's scalar mixes of layers 0..l are): every delta is >= 0, so E[l] lies between the
    first and the last layer. NaN when the curve has under two layers or never improves on its first layer."""
    layers, scores = np.asarray(layers, dtype=float), np.asarray(scores, dtype=float)
    known = ~(np.isnan(layers) | np.isnan(scores))
    order = np.argsort(layers[known], kind="stable")
    layers, scores = layers[known][order], scores[known][order]
    if len(layers) < 2:
        return math.nan
    gains = np.diff(np.maximum.accumulate(better(metric) * scores))
    total = gains.sum()
    if not total > 0:
        return math.nan
    return float((layers[1:] * gains).sum() / total)


@dataclass(frozen=True)
class StudyView:
    """What the page shows: the tidy rows, the picked rows, and the orders of models, tasks, metrics, poolings
    and (metric, pooling) pairs the controls switch between (``default``: the pair shown first)."""

    frame: pd.DataFrame
    picks: pd.DataFrame
    curves: dict[tuple, list[dict]]
    models: list[str]
    tasks: list[str]
    metrics: list[str]
    poolings: list[str]
    combos: list[tuple[str, str]]
    default: int

    def curve(self, pick) -> list[dict]:
        """The layer curve behind a picked row (its model, task, metric, pooling and classifier): its rows, by
        layer."""
        return self.curves.get(tuple(pick[column] for column in (*CELL, "classifier")), [])


def _first_by_count(values: pd.Series, order: list[str]) -> str:
    counts = values.value_counts()
    return max(order, key=lambda v: (counts.get(v, 0), -order.index(v)))


def view(table) -> StudyView:
    """The report's view of a study table (``tidy`` + ``pick_rows``, and the orders)."""
    frame = tidy(table)
    picks = pick_rows(frame)
    metrics = list(dict.fromkeys(frame["metric"]))
    poolings = list(dict.fromkeys(frame["pooling"]))
    combos = list(dict.fromkeys(zip(frame["metric"], frame["pooling"], strict=True)))
    chosen = frame[frame["chosen"]] if frame["chosen"].any() else frame
    metric = _first_by_count(chosen["metric"], metrics)
    pooling = _first_by_count(chosen.loc[chosen["metric"] == metric, "pooling"], poolings)
    models = list(dict.fromkeys(frame.sort_values(["random_init"], kind="stable")["model_key"]))
    return StudyView(
        frame,
        picks,
        curves_of(frame),
        models,
        list(dict.fromkeys(frame["task"])),
        metrics,
        poolings,
        combos,
        combos.index((metric, pooling)),
    )
