"""Figures of the beyond-accuracy analyses: the neuron selection curve and the probe-complexity Pareto front.

Okabe-Ito colours (as ``featx plot``), each line also with its own marker; written as PNG and SVG.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

COLOURS = {
    "top probe": "#0072B2",
    "top anova": "#009E73",
    "random": "#999999",
    "bottom probe": "#D55E00",
    "bottom anova": "#CC79A7",
    "real": "#0072B2",
    "control": "#E69F00",
}
MARKERS = {"top probe": "o", "top anova": "s", "random": "D", "bottom probe": "v", "bottom anova": "^"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _grid(n: int, plt, width: float = 4.0, height: float = 3.2):
    cols = min(n, 4)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(width * cols, height * rows + 0.6), squeeze=False, sharey=True, layout="constrained"
    )
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _save(fig, output: Path, dpi: int = 150) -> Path:
    output = Path(output)
    fig.savefig(output.with_suffix(".png"), dpi=dpi, bbox_inches="tight")
    fig.savefig(output.with_suffix(".svg"), bbox_inches="tight")
    return output.with_suffix(".png")


def plot_selection(selection: pd.DataFrame, layer: int, ax) -> None:
    """Accuracy against the share of neurons kept: top/bottom of each ranking, random, and all neurons."""
    rows = selection[selection.layer == layer]
    for (choice, ranking), part in rows[rows.selection != "all"].groupby(["selection", "ranking"], sort=False):
        name = choice if ranking == "-" else f"{choice} {ranking}"
        part = part.sort_values("fraction")
        errors = [part.accuracy - part.accuracy_low, part.accuracy_high - part.accuracy]
        ax.errorbar(
            part.fraction * 100,
            part.accuracy,
            yerr=np.clip(np.nan_to_num(errors), 0, None),
            label=name,
            color=COLOURS[name],
            marker=MARKERS[name],
            capsize=3,
            linestyle="--" if choice == "bottom" else "-",
        )
    full = rows[rows.selection == "all"].iloc[0]
    ax.axhline(full.accuracy, color="black", linewidth=1, label=f"all {int(full.k)} neurons")
    ax.axhspan(full.accuracy_low, full.accuracy_high, color="black", alpha=0.08)
    ax.set_xscale("log")
    ticks = sorted(set(rows.fraction[rows.selection != "all"] * 100))
    ax.set_xticks(ticks, [f"{tick:g}" for tick in ticks])
    ax.minorticks_off()
    ax.set_xlabel("neurons kept (% of the layer, log scale)")
    ax.set_title(f"layer {layer}")
    ax.grid(alpha=0.3)


def save_selection_figure(selection: pd.DataFrame, meta: dict, output: Path) -> Path:
    plt = _pyplot()
    layers = list(meta["layers"])
    fig, axes = _grid(len(layers), plt)
    for ax, layer in zip(axes, layers, strict=False):
        plot_selection(selection, layer, ax)
    axes[0].set_ylabel("accuracy (retrained logreg)")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{meta['model']}: neurons for '{meta['label']}' ({meta['pooling']} pooling, {meta['evaluation']})")
    path = _save(fig, output)
    plt.close(fig)
    return path


def pareto_front(points: pd.DataFrame, x: str = "params", y: str = "accuracy") -> pd.DataFrame:
    """The points no other point beats on both axes (fewer or equal parameters and higher accuracy)."""
    ordered = points.sort_values([x, y], ascending=[True, False])
    best, keep = -np.inf, []
    for index, row in ordered.iterrows():
        if row[y] > best + 1e-12:
            keep.append(index)
            best = row[y]
    return ordered.loc[keep]


def plot_pareto(sweep: pd.DataFrame, layer, pooling: str, ax) -> None:
    """Accuracy against parameters of every probe of one layer; real labels and control task, fronts drawn."""
    rows = sweep[(sweep.layer == layer) & (sweep.pooling == pooling)]
    markers = {"logreg": "o", "rank": "s", "mlp": "^"}
    for task, colour in (("real", COLOURS["real"]), ("control", COLOURS["control"])):
        part = rows[rows.task == task]
        if part.empty:
            continue
        for family, group in part.groupby("family", sort=False):
            ax.scatter(
                group.params,
                group.accuracy,
                color=colour,
                marker=markers.get(family, "o"),
                alpha=0.6,
                s=22,
                label=f"{family} ({task})",
            )
        front = pareto_front(part)
        xs = list(front.params) + [rows.params.max()]  # the front holds until the largest probe
        ax.step(xs, list(front.accuracy) + [front.accuracy.iloc[-1]], where="post", color=colour, linewidth=1.5)
    ax.set_xscale("log")
    ax.set_xlabel("probe parameters (log scale)")
    ax.set_title(f"layer {layer}")
    ax.grid(alpha=0.3)


def save_pareto_figure(sweep: pd.DataFrame, meta: dict, output: Path, pooling: str) -> Path:
    plt = _pyplot()
    layers = list(meta["layers"])
    fig, axes = _grid(len(layers), plt)
    for ax, layer in zip(axes, layers, strict=False):
        plot_pareto(sweep, layer, pooling, ax)
    axes[0].set_ylabel("accuracy")
    axes[0].legend(fontsize=6, loc="lower right")
    fig.suptitle(
        f"{meta['model']}: accuracy / complexity Pareto fronts for '{meta['label']}' ({pooling} pooling)\n"
        "blue = real labels, orange = control task (permuted labels); lines = Pareto fronts"
    )
    path = _save(fig, output)
    plt.close(fig)
    return path
