"""Figures of the beyond-accuracy analyses: the neuron selection curve, the probe-complexity Pareto front, and
the accuracy before/after a concept erasure (of the erased label and, amnesic probing, of the others).

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
    from .style import write_figure

    output = Path(output)
    write_figure(fig, output.with_suffix(".png"), dpi=dpi, bbox_inches="tight")
    write_figure(fig, output.with_suffix(".svg"), bbox_inches="tight")
    return output.with_suffix(".png")


def plot_selection(selection: pd.DataFrame, layer: int, ax) -> None:
    """Accuracy against the share of neurons kept: top/bottom of each ranking, random (the mean of its draws), all
    neurons, and the majority class."""
    rows = selection[selection.layer == layer]
    for (choice, ranking), part in rows[rows.selection != "all"].groupby(["selection", "ranking"], sort=False):
        name = choice if ranking == "-" else f"{choice} {ranking}"
        part = part.sort_values("fraction")
        errors = [part.accuracy - part.accuracy_low, part.accuracy_high - part.accuracy]
        draws = float(part["draws"].max()) if "draws" in part else float("nan")  # files before the draws: none
        ax.errorbar(
            part.fraction * 100,
            part.accuracy,
            yerr=np.clip(np.nan_to_num(errors), 0, None),
            label=f"{name} (mean of {draws:g})" if choice == "random" and draws > 1 else name,
            color=COLOURS[name],
            marker=MARKERS[name],
            capsize=3,
            linestyle="--" if choice == "bottom" else "-",
        )
    full = rows[rows.selection == "all"].iloc[0]
    ax.axhline(full.accuracy, color="black", linewidth=1, label=f"all {int(full.k)} neurons")
    ax.axhspan(full.accuracy_low, full.accuracy_high, color="black", alpha=0.08)
    if "majority" in rows and pd.notna(full.majority):
        ax.axhline(float(full.majority), color="#666666", linestyle=":", linewidth=1.4, label="majority class")
    ax.set_xscale("log")
    ticks = sorted(set(rows.fraction[rows.selection != "all"] * 100))
    ax.set_xticks(ticks, [f"{tick:g}" for tick in ticks])
    ax.minorticks_off()
    ax.set_xlabel("neurons kept (% of the layer, log scale)")
    ax.set_title(f"layer {layer}")
    ax.grid(alpha=0.3)


def selection_figure(selection: pd.DataFrame, meta: dict):
    """The selection curve of every layer of a ``featx neurons`` run, one panel each."""
    plt = _pyplot()
    layers = list(meta["layers"])
    fig, axes = _grid(len(layers), plt)
    for ax, layer in zip(axes, layers, strict=False):
        plot_selection(selection, layer, ax)
    axes[0].set_ylabel("accuracy (retrained logreg)")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{meta['model']}: neurons for '{meta['label']}' ({meta['pooling']} pooling, {meta['evaluation']})")
    return fig


def save_selection_figure(selection: pd.DataFrame, meta: dict, output: Path) -> Path:
    plt = _pyplot()
    fig = selection_figure(selection, meta)
    path = _save(fig, output)
    plt.close(fig)
    return path


def plot_erasure(table: pd.DataFrame, ax) -> None:
    """The erased label's accuracy by layer before (solid) and after (dashed) the erasure, and after removing as
    many random directions (dotted, faint), one colour per pooling, 95% bands, the majority class dotted grey."""
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00"]
    for index, (pooling, part) in enumerate(table.groupby("pooling", sort=False)):
        part = part.sort_values("layer")
        colour = palette[index % len(palette)]
        for when, style, marker in (("before", "-", "o"), ("after", "--", "v")):
            ax.plot(part.layer, part[when], color=colour, linestyle=style, marker=marker, label=f"{pooling}: {when}")
            ax.fill_between(
                part.layer, part[f"{when}_low"], part[f"{when}_high"], color=colour, alpha=0.12, linewidth=0
            )
        if "random_after" in part and part.random_after.notna().any():  # files written before the control: none
            ax.plot(
                part.layer, part.random_after, color=colour, linestyle=":", alpha=0.7, label=f"{pooling}: random dirs"
            )
    majority = table.majority.dropna()
    if not majority.empty:
        ax.axhline(float(majority.iloc[0]), color="#666666", linestyle=":", linewidth=1.4, label="majority class")
    ax.set_xticks(sorted(set(table.layer.astype(int))))
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel("probe accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))


def plot_amnesic(amnesic: pd.DataFrame, ax) -> None:
    """Each other label column's accuracy by layer before (solid) and after (dashed) the erasure, and after
    removing as many random directions (dotted): amnesic probing."""
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]
    first = amnesic[amnesic.pooling == amnesic.pooling.iloc[0]]
    for index, (label, part) in enumerate(first.groupby("label", sort=False)):
        part = part.sort_values("layer")
        colour = palette[index % len(palette)]
        ax.plot(part.layer, part.before, color=colour, marker="o", label=f"{label}: before")
        ax.plot(part.layer, part.after, color=colour, marker="v", linestyle="--", label=f"{label}: after")
        ax.plot(part.layer, part.random_after, color=colour, linestyle=":", alpha=0.7, label=f"{label}: random dirs")
    ax.set_xticks(sorted(set(first.layer.astype(int))))
    ax.set_xlabel(f"layer (0 = embeddings; {first.pooling.iloc[0]} pooling)")
    ax.set_ylabel("probe accuracy of the other label")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))


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
    fig = pareto_figure(sweep, meta, pooling)
    path = _save(fig, output)
    plt.close(fig)
    return path


def pareto_figure(sweep: pd.DataFrame, meta: dict, pooling: str):
    """The accuracy/complexity Pareto fronts of every layer of a sweep at one pooling, one panel each."""
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
    return fig
