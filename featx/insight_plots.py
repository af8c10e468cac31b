"""Panels for the insight columns of a probing run: MDL compression, significance against the best
layer, and learning curves. Each takes a results table (or its path) and an optional matplotlib axis.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _table(results) -> tuple[pd.DataFrame, dict]:
    if isinstance(results, pd.DataFrame):
        return results, {}
    if hasattr(results, "table") and hasattr(results, "meta"):
        return results.table, results.meta
    from .probing import load_results

    return load_results(results)


def _singles(table: pd.DataFrame, classifier: str | None) -> tuple[pd.DataFrame, str]:
    rows = table[(table.kind == "single") & (table.features == "main")]
    classifier = classifier or (rows.classifier.iloc[0] if len(rows) else "logreg")
    rows = rows[rows.classifier == classifier].copy()
    rows["layer"] = rows["layer"].astype(int)
    return rows.sort_values(["pooling", "layer"], kind="stable"), classifier


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6.5, 4.2), layout="constrained")
    return ax


def plot_mdl(results, ax=None, classifier: str | None = None, value: str = "mdl_compression"):
    """MDL compression (or ``value="mdl_bits"``) by layer, one line per pooling; 1 = no information."""
    table, _ = _table(results)
    if value not in table or table[value].notna().sum() == 0:
        from .errors import InputError

        raise InputError("these results have no MDL columns", "run featx probe --mdl")
    rows, classifier = _singles(table, classifier)
    ax = _axes(ax)
    for index, (pooling, part) in enumerate(rows.groupby("pooling", sort=False)):
        ax.plot(part.layer, part[value], color=COLOURS[index % 8], marker=MARKERS[index % 8], linewidth=2,
                label=pooling)
    if value == "mdl_compression":
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1.2, label="uniform code (no information)")
    ax.set_xticks(sorted(rows.layer.unique()))
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel("compression (uniform / online code)" if value == "mdl_compression" else "online codelength (bits)")
    ax.set_title("MDL probe (online code)", loc="left")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return ax


def plot_significance(results, ax=None, classifier: str | None = None, metric: str = "accuracy"):
    """``metric`` by layer per pooling; filled markers: significantly worse than that pooling's best
    (Holm-adjusted), hollow: not distinguishable from the best; the best is starred."""
    table, _ = _table(results)
    rows, classifier = _singles(table, classifier)
    ax = _axes(ax)
    for index, (pooling, part) in enumerate(rows.groupby("pooling", sort=False)):
        colour, marker = COLOURS[index % 8], MARKERS[index % 8]
        ax.plot(part.layer, part[metric], color=colour, linewidth=1.8, label=pooling, zorder=2)
        if "significant_vs_best" in part:
            worse = part.significant_vs_best.map(lambda v: v is True or v == "True").to_numpy(bool)
        else:
            worse = np.zeros(len(part), bool)
        ax.scatter(part.layer[worse], part[metric][worse], color=colour, marker=marker, s=36, zorder=3)
        ax.scatter(part.layer[~worse], part[metric][~worse], facecolors="white", edgecolors=colour, marker=marker,
                   s=48, linewidths=1.6, zorder=3)
        best = part.loc[part[metric].idxmax()]
        ax.scatter([best.layer], [best[metric]], marker="*", s=180, color=colour, edgecolors="black", zorder=4)
    ax.set_xticks(sorted(rows.layer.unique()))
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(metric)
    ax.set_title("hollow: not significantly different from the best (Holm, 0.05)", loc="left", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return ax


def plot_learning_curves(curve, ax=None, pooling: str | None = None, classifier: str | None = None):
    """Accuracy against training rows, one line per layer (with its 95% band)."""
    if not isinstance(curve, pd.DataFrame):
        curve = pd.read_csv(curve)
    if curve.empty:
        from .errors import InputError

        raise InputError("the learning-curve table is empty", "run featx probe --train-sizes 0.1,0.25,0.5,1.0")
    pooling = pooling or curve.pooling.iloc[0]
    classifier = classifier or curve.classifier.iloc[0]
    part = curve[(curve.pooling == pooling) & (curve.classifier == classifier)]
    ax = _axes(ax)
    for index, (spec, rows) in enumerate(part.groupby("layer_spec", sort=False)):
        rows = rows.sort_values("n_train")
        colour = COLOURS[index % 8]
        ax.plot(rows.n_train, rows.accuracy, color=colour, marker=MARKERS[index % 8], linewidth=2, label=f"layer {spec}")
        if rows[["accuracy_low", "accuracy_high"]].notna().all().all():
            ax.fill_between(rows.n_train, rows.accuracy_low, rows.accuracy_high, color=colour, alpha=0.12, linewidth=0)
    ax.set_xscale("log")
    ax.set_xlabel("training rows (per fold)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"learning curves ({pooling}, {classifier})", loc="left")
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return ax


def insight_figure(results, curve=None, classifier: str | None = None, output: str | os.PathLike | None = None):
    """Significance, MDL (when present) and learning curves (when given) side by side; saved if ``output``."""
    import matplotlib.pyplot as plt

    table, meta = _table(results)
    if curve is None and meta.get("curve_file") and not isinstance(results, pd.DataFrame) and isinstance(results, (str, Path)):
        candidate = Path(results).with_name(meta["curve_file"])
        curve = candidate if candidate.exists() else None
    panels = ["significance"] + (["mdl"] if "mdl_bits" in table and table.mdl_bits.notna().any() else []) \
        + (["curve"] if curve is not None else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.4), layout="constrained", squeeze=False)
    for ax, panel in zip(axes[0], panels):
        if panel == "significance":
            plot_significance(table, ax, classifier)
        elif panel == "mdl":
            plot_mdl(table, ax, classifier)
        else:
            plot_learning_curves(curve, ax)
    if output is not None:
        fig.savefig(output, dpi=150)
    return fig
