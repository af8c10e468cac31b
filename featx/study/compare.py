"""Model against model, per task: each pair of models on the same test rows, each at its own chosen layer (and
pooling and classifier: the rows of its predictions file), with ``featx compare``'s paired test of the study's
metric (``featx.report.paired_test_at``), Holm-adjusted over the pairs of a task: ``OUTPUT/paired.csv``.

Columns (``PAIRED_COLUMNS``): ``corpus``, ``label``, ``metric``, ``model_a``, ``layer_a``, ``model_b``,
``layer_b``, ``score_a``, ``score_b``, ``difference`` (a - b), ``p``, ``p_holm``, ``significant`` (p_holm below
0.05), and ``note`` (why a pair was not tested: other rows, no predictions file).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..probing import SIGNIFICANCE_ALPHA, holm

if TYPE_CHECKING:
    from .plan import StudyPlan

PAIRED_COLUMNS = (
    "corpus", "label", "metric", "model_a", "layer_a", "model_b", "layer_b", "score_a", "score_b", "difference",
    "p", "p_holm", "significant", "note",
)  # fmt: skip


def _pair(meta_a: dict, layer_a: int, meta_b: dict, layer_b: int, metric: str) -> dict:
    from ..report import paired_test_at, why_not_paired

    why = why_not_paired(meta_a, meta_b)
    if why is not None:
        return {"p": float("nan"), "note": why}
    try:
        return {**paired_test_at(meta_a, layer_a, meta_b, layer_b, metric), "note": ""}
    except ValueError as err:
        return {"p": float("nan"), "note": str(err)}


def task_pairs(plan: StudyPlan, summary: pd.DataFrame, corpus: str, label: str) -> list[dict]:
    """Every pair of models of one task, in study order, at their chosen layers (p unadjusted)."""
    from ..report import load_results

    lines = summary[(summary["corpus"] == corpus) & (summary["label"] == label)]
    cells = {(cell.model.name, cell.corpus.name, cell.label): cell for cell in plan.probes}
    metas = {model: load_results(cells[(model, corpus, label)].results)[1] for model in lines["model"]}
    records = []
    for (_, a), (_, b) in itertools.combinations(lines.iterrows(), 2):
        tested = _pair(metas[a["model"]], int(a["layer"]), metas[b["model"]], int(b["layer"]), str(a["metric"]))
        record = {"corpus": corpus, "label": label, "metric": a["metric"], "model_a": a["model"]}
        record.update(layer_a=int(a["layer"]), model_b=b["model"], layer_b=int(b["layer"]))
        record.update(score_a=tested.get("score_a", a["score"]), score_b=tested.get("score_b", b["score"]))
        records.append({**record, "p": tested["p"], "note": tested["note"]})
    return records


def _adjusted(records: list[dict]) -> list[dict]:
    p = np.array([record["p"] for record in records], dtype=float)
    finite = ~np.isnan(p)
    adjusted = np.full(len(p), np.nan)
    if finite.any():
        adjusted[finite] = holm(p[finite])
    for record, value in zip(records, adjusted, strict=True):
        record["p_holm"] = float(value)
        record["significant"] = bool(not math.isnan(value) and value < SIGNIFICANCE_ALPHA)
        record["difference"] = float(record["score_a"]) - float(record["score_b"])
    return records


def paired_models(plan: StudyPlan, summary: pd.DataFrame) -> pd.DataFrame:
    """The model-vs-model tests of every task with at least two models done."""
    records: list[dict] = []
    for (corpus, label), lines in summary.groupby(["corpus", "label"], sort=False):
        if len(lines) > 1:
            records += _adjusted(task_pairs(plan, summary, str(corpus), str(label)))
    return pd.DataFrame.from_records(records, columns=list(PAIRED_COLUMNS))
