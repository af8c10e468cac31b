"""The comparison panel of ``featx compare`` (and ``featx plot --compare``): one line per results file with
its 95% band, its chosen layer starred, its majority class dashed in its colour, the layers where it differs
from the first file ringed; the y limits come from the values drawn, references included."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..load import METRIC_NAMES, Entry, references
from .style import CYCLE, MARKERS, OKABE_ITO, RC, axes_or_new, legend_below, ring


def _x(entry: Entry, layers, relative_depth: bool):
    layers = np.asarray(layers, dtype=float)
    return layers / entry.n_layers if relative_depth else layers


def _draw_entry(ax, entry: Entry, index: int, metric: str, relative_depth: bool) -> tuple[str, list[float]]:
    """One file's line with its 95% band, its chosen layer starred and its majority class dashed, all in its
    colour; returns the colour and every value drawn (for the axis limits)."""
    colour, marker = CYCLE[index % len(CYCLE)], MARKERS[index % len(MARKERS)]
    layers = entry.rows["layer"].astype(int).to_numpy()
    x = _x(entry, layers, relative_depth)
    best = entry.best
    y = entry.rows[metric].astype(float).to_numpy()
    chosen = "selected layer" if entry.selected else "best layer"
    ax.plot(
        x,
        y,
        color=colour,
        marker=marker,
        markersize=5,
        linewidth=2,
        label=f"{entry.name} ({best['pooling']}): {chosen} {int(best['layer'])}, {float(best[metric]):.2f}",
    )
    values = list(y)
    low, high = f"{metric}_low", f"{metric}_high"
    if {low, high} <= set(entry.rows.columns) and entry.rows[[low, high]].notna().all().all():
        lo, hi = entry.rows[low].astype(float).to_numpy(), entry.rows[high].astype(float).to_numpy()
        ax.fill_between(x, lo, hi, color=colour, alpha=0.13, linewidth=0, zorder=1.5)
        values += list(lo) + list(hi)
    ax.plot(
        _x(entry, [int(best["layer"])], relative_depth),
        [float(best[metric])],
        marker="*",
        markersize=15,
        color=OKABE_ITO["black"],
        markerfacecolor=colour,
        linestyle="none",
        zorder=4,
    )
    majority = [value for name, value in references(entry.frame, metric) if name == "majority class"]
    if majority:
        ax.hlines(majority[0], x.min(), x.max(), colors=colour, linestyles="--", linewidth=1.4, alpha=0.9)
        values.append(majority[0])
    return colour, values


def _limits(ax, values: list[float]) -> None:
    """y limits from every value drawn (curves, bands, majority lines), padded; never above 1 by much."""
    finite = [value for value in values if np.isfinite(value)]
    if not finite:
        return
    low, high = min(finite), max(finite)
    pad = max(0.01, 0.05 * (high - low))
    ax.set_ylim(low - pad, min(high + pad, 1.0 + pad / 2) if high <= 1.0 else high + pad)


def plot_compare(
    entries: list[Entry],
    ax=None,
    metric: str = "accuracy",
    relative_depth: bool = False,
    tests: pd.DataFrame | None = None,
    title: bool | str = True,
):
    """One line per file (its pooling), best layer starred, its majority class dashed in the same colour;
    layers where a file differs significantly from the first file are ringed."""
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        ringed, values = False, []
        for index, entry in enumerate(entries):
            colour, drawn = _draw_entry(ax, entry, index, metric, relative_depth)
            values += drawn
            if tests is not None and index > 0 and not tests.empty:
                ringed |= _ring_significant(ax, entry, tests, metric, relative_depth, colour)
        if ringed:
            ax.plot(
                [],
                [],
                marker="o",
                markersize=11,
                markerfacecolor="none",
                markeredgecolor=OKABE_ITO["black"],
                linestyle="none",
                label=f"differs from {entries[0].name} (paired test, Holm, p < 0.05)",
            )
        if relative_depth:
            ax.set_xlabel("relative depth (layer / number of layers; 0 = embeddings)")
        else:
            ax.set_xticks(sorted({int(layer) for entry in entries for layer in entry.rows["layer"]}))
            ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel(METRIC_NAMES.get(metric, metric))
        _limits(ax, values)
        ax.grid(True, axis="y", alpha=0.3)
        legend_below(ax, ncol=2)
        if title:
            ax.set_title(
                title
                if isinstance(title, str)
                else f"{METRIC_NAMES.get(metric, metric)} by layer (bands: 95% intervals; dashed: majority class)",
                loc="left",
            )
    return ax


def _ring_significant(ax, entry: Entry, tests: pd.DataFrame, metric: str, relative_depth: bool, colour) -> bool:
    mine = tests[(tests["b"] == entry.name) & tests["significant"].astype(bool)]
    if mine.empty:
        return False
    values = dict(zip(entry.rows["layer"].astype(int), entry.rows[metric].astype(float), strict=False))
    tested = mine["layer_b"] if "layer_b" in mine else mine["layer"]  # b's layer of each pair (relative depth)
    layers = [int(layer) for layer in tested if int(layer) in values]
    ring(ax, _x(entry, layers, relative_depth), [values[layer] for layer in layers], size=11, width=1.4, zorder=5)
    return bool(layers)
