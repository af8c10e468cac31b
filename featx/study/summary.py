"""What a study shows, per model and task (corpus x label), from its results table: ``OUTPUT/summary.csv``.

Columns (``SUMMARY_COLUMNS``):

``model``, ``corpus``, ``label``, ``metric``, ``random_init``, ``seed``
``group``            the corpus's group column (``[[corpora]] group``; empty without one): the probe's folds,
                     holdouts and resamples kept its groups whole
``layer``, ``pooling``, ``classifier``, ``site``   the row chosen on the training part
``n_layers``, ``relative_depth``   its depth (layer / n_layers)
``score``, ``ci_low``, ``ci_high`` its test score and 95% interval
``tied_layers``      the layers of that pooling and classifier not significantly different from it (the paired test
                     on the same test rows, Holm-adjusted over the layers: ``p_vs_best``), as text ("2-4,6")
``above_layers``     the layers of that pooling and classifier significantly above it on the test rows: the
                     choice, made on the training part, missed them (empty when none)
``flat``             true when every layer is tied: the curve is flat, and no layer stands out
``majority``, ``over_majority``   the majority-class baseline (for a number, the training mean) and score - it
``lexical``, ``over_lexical``   the lexical baseline and score - lexical
``control``, ``over_control``   the control task's score at the chosen row and score - control (selectivity)
``expected_layer``, ``expected_depth``   Tenney et al. (2019)'s expected layer of the task's curve, and / n_layers
``control_models``, ``control_mean``, ``control_sd``, ``over_control_models``   the random-weights models of the
                     study (``random_init = true``) on the same task: how many, the mean and standard deviation
                     (n - 1) of their chosen scores, and this model's score - that mean (empty for the controls)

The expected layer (``featx.report.expected_layer``, the one definition the study page shares): with s(l) the
test score at layer l (the chosen pooling and classifier), made cumulative as Tenney et al. (2019)'s scalar
mixes of layers 0..l are (s(l) = the best score of layers 0..l), and delta(l) = s(l) - s(l - 1) the gain of
layer l, E[l] = sum l * delta(l) / sum delta(l) over l = 1..L. Every delta is >= 0, so E[l] is the mean layer
of the gains, weighted by their size, and stays within 1..L; a curve that never rises above its first layer
(flat or falling) has no expected layer (empty).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SUMMARY_COLUMNS = (
    "model", "corpus", "label", "group", "metric", "random_init", "seed", "site", "layer", "pooling", "classifier",
    "n_layers", "relative_depth", "score", "ci_low", "ci_high", "tied_layers", "above_layers", "flat", "majority",
    "over_majority", "lexical", "over_lexical", "control", "over_control", "expected_layer", "expected_depth",
    "control_models", "control_mean", "control_sd", "over_control_models",
)  # fmt: skip
CELL = ["model", "corpus", "label"]


def expected_layer(layers, scores, metric: str = "score") -> float:
    """Tenney et al.'s E[l] on the cumulative curve (``featx.report.expected_layer``); NaN when no layer gains."""
    from .. import report

    return report.expected_layer(layers, scores, metric)


def spans(layers) -> str:
    """Whole numbers as ranges: [0, 1, 2, 4, 6, 7] -> "0-2,4,6-7"."""
    values = sorted(int(layer) for layer in layers)
    runs: list[list[int]] = []
    for value in values:
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _curve(rows: pd.DataFrame, chosen: pd.Series) -> pd.DataFrame:
    same = (rows["site"] == chosen["site"]) & (rows["pooling"] == chosen["pooling"])
    return rows[same & (rows["classifier"] == chosen["classifier"])].sort_values("layer")


def cell_summary(rows: pd.DataFrame) -> dict | None:
    """The summary line of one (model, corpus, label) cell's rows (None: no chosen row)."""
    chosen_rows = rows[rows["chosen"].astype(bool)]
    if chosen_rows.empty:
        return None
    chosen = chosen_rows.iloc[0]
    curve = _curve(rows, chosen)
    significant = curve["significant_vs_best"].astype(bool)
    tied = curve[~significant]["layer"]
    above = curve[significant & (curve["score"] > chosen["score"])]["layer"]  # every probe metric: larger is better
    expected = expected_layer(curve["layer"], curve["score"], str(chosen["metric"]))
    line = {key: chosen[key] for key in ("model", "corpus", "label", "metric", "random_init", "seed", "site")}
    line["group"] = chosen["group"] if "group" in chosen and isinstance(chosen["group"], str) else None
    line.update({key: chosen[key] for key in ("layer", "pooling", "classifier", "n_layers", "relative_depth")})
    line.update({key: chosen[key] for key in ("score", "ci_low", "ci_high", "majority", "lexical", "control")})
    line.update(
        tied_layers=spans(tied),
        above_layers=spans(above),
        flat=len(curve) > 1 and len(tied) == len(curve),
        over_majority=chosen["score"] - chosen["majority"],
        over_lexical=chosen["score"] - chosen["lexical"],
        over_control=chosen["score"] - chosen["control"],
        expected_layer=expected,
        expected_depth=expected / chosen["n_layers"],
    )
    return line


def _control_models(summary: pd.DataFrame) -> pd.DataFrame:
    summary = summary.copy()
    for column in ("control_mean", "control_sd", "over_control_models"):
        summary[column] = np.nan
    summary["control_models"] = 0
    for _, index in summary.groupby(["corpus", "label"], sort=False).groups.items():
        task = summary.loc[index]
        controls = task[task["random_init"].astype(bool)]["score"].astype(float)
        if controls.empty:
            continue
        mean = float(controls.mean())
        sd = float(controls.std(ddof=1)) if len(controls) > 1 else float("nan")
        own = index[~task["random_init"].astype(bool).to_numpy()]
        summary.loc[index, ["control_models", "control_mean", "control_sd"]] = [len(controls), mean, sd]
        summary.loc[own, "over_control_models"] = summary.loc[own, "score"].astype(float) - mean
    return summary


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """The summary table of a results table: one line per model and task, in the table's order."""
    lines = [
        line
        for _, rows in results.groupby(CELL, sort=False)
        if (line := cell_summary(rows.reset_index(drop=True))) is not None
    ]
    if not lines:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    summary = _control_models(pd.DataFrame(lines))
    summary["control_models"] = summary["control_models"].astype(int)
    return summary[list(SUMMARY_COLUMNS)].reset_index(drop=True)
