"""Layer-wise line panels: the metric by layer per pooling and the MDL compression (per-class F1: ``classes``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...errors import InputError
from ..load import (
    METRIC_NAMES,
    chosen_row,
    layer_results,
    layer_rows,
    load_results,
    poolings_of,
    references,
    series_linestyle,
)
from .pairs import draw_cosine_baseline
from .style import OKABE_ITO, RC, REFERENCE_GREY, axes_or_new, legend_below, series_style
from .word_panels import mark_layer_summary

COINCIDE = 0.005  # reference lines closer than this are drawn so that both stay visible


def plot_layer_curves(
    frame: pd.DataFrame,
    meta: dict | None = None,
    ax=None,
    metric: str = "accuracy",
    classifier: str | None = None,
    legend: bool = True,
    title: bool | str = True,
):
    """``metric`` against layer, one line per pooling, 95% bands, reference lines, best layer starred."""
    import matplotlib.pyplot as plt

    frame, meta, classifier, rows = layer_results(frame, meta, metric, classifier)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        core, marks = draw_series(ax, rows, metric)
        chosen = chosen_row(rows, metric, meta)[0]  # the reference curves are drawn at its pooling
        values = _draw_baseline_curve(ax, frame, chosen, metric, classifier)
        values += draw_cosine_baseline(ax, meta, chosen, metric)  # sentence pairs (separate mode)
        control, drawn = _draw_control_curve(ax, rows, chosen, metric)
        found = [
            ref for ref in references(frame, metric, classifier) if not (drawn and ref[0].startswith("control task"))
        ]
        values += control + draw_references(ax, found, sorted(set(rows["layer"].astype(int))))
        best = _star_best(ax, rows, metric, meta)
        mark_layer_summary(ax, meta, str(best.get("probe_pooling", best["pooling"])))  # word-level runs only
        _legend_marks(ax, marks)
        finish_layer_axes(ax, rows, core, values, metric)
        if legend:
            legend_below(ax)
        if title:
            ax.set_title(
                title if isinstance(title, str) else f"{METRIC_NAMES.get(metric, metric)} by layer", loc="left"
            )
    return ax


def draw_series(ax, rows: pd.DataFrame, metric: str) -> tuple[list[float], set[str]]:
    """One line per pooling (or site) with its 95% band; returns the values drawn and the kinds of significance
    marks drawn ("like" hollow markers, "above" triangles: ``_mark_like_best``)."""
    values: list[float] = []
    marks: set[str] = set()
    sites = list(dict.fromkeys(rows["site"])) if "site" in rows.columns else []
    for index, pooling in enumerate(poolings_of(rows)):
        part = rows[rows["pooling"] == pooling]
        colour, marker = series_style(pooling, index)  # site names fall through to the cycle
        layers = part["layer"].astype(int).to_numpy()
        y = part[metric].astype(float).to_numpy()
        ax.plot(
            layers,
            y,
            color=colour,
            marker=marker,
            markersize=5,
            linewidth=2,
            label=pooling,
            zorder=3,
            linestyle=series_linestyle(part, sites),
        )
        if metric == "accuracy":
            marks |= _mark_like_best(ax, part, layers, y, colour, marker)
        low, high = f"{metric}_low", f"{metric}_high"
        if low in part.columns and high in part.columns and part[[low, high]].notna().all().all():
            lo, hi = part[low].astype(float).to_numpy(), part[high].astype(float).to_numpy()
            ax.fill_between(layers, lo, hi, color=colour, alpha=0.15, linewidth=0, zorder=2)
            values += list(lo) + list(hi)
        values += list(y[np.isfinite(y)])
    return values, marks


def _star_best(ax, rows: pd.DataFrame, metric: str, meta: dict | None = None) -> pd.Series:
    """A star on the chosen (layer, pooling): the one selected on the training part when the run recorded a
    selection score, else the best on the test rows (the legend says which); returns its row."""
    best, selected = chosen_row(rows, metric, meta)
    star_row(ax, best, metric, "selected on the training part" if selected else "best on the test rows")
    return best


def star_row(ax, row: pd.Series, metric: str, how: str) -> None:
    """The star of a chosen row at its (layer, ``metric``), its legend entry saying ``how`` it was chosen."""
    ax.plot(
        [int(row["layer"])],
        [float(row[metric])],
        marker="*",
        markersize=17,
        color=OKABE_ITO["black"],
        markerfacecolor=OKABE_ITO["yellow"],
        linestyle="none",
        zorder=4,
        label=f"{how}: layer {int(row['layer'])}, {row['pooling']} ({float(row[metric]):.3f})",
    )


def finish_layer_axes(ax, rows: pd.DataFrame, core: list[float], values: list[float], metric: str) -> None:
    """Layer ticks, y limits from the data (at most a little above 1), labels and grid.

    The limits hold the curves and their bands (``core``) and every reference or extra curve (``values``) close
    to them; one far away (a majority class of 0.15 under curves at 0.85-0.94) would flatten the differences
    that matter, so it stays off the axis and its legend entry, which states its value, says so."""
    layers_all = sorted(set(rows["layer"].astype(int)))
    ax.set_xticks(layers_all)
    ax.set_xlim(min(layers_all) - 0.3, max(layers_all) + 0.3)
    finite = [value for value in core if math.isfinite(value)]
    if finite:
        low, high = min(finite), max(finite)
        reach = max(0.1, high - low)
        near = [value for value in values if math.isfinite(value) and low - reach <= value <= high + reach]
        low, high = min([low, *near]), max([high, *near])
        pad = max(0.02, 0.06 * (high - low))
        top = high + pad
        if metric != "selectivity":
            top = min(top, 1.0 + pad / 2)
        ax.set_ylim(low - pad, top)
        _mark_off_axis(ax, low - pad, top)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel(METRIC_NAMES.get(metric, metric))
    ax.grid(True, axis="y", alpha=0.3)


def _mark_off_axis(ax, bottom: float, top: float) -> None:
    """Legend entries of lines drawn wholly outside the y limits get "(below the axis)" or "(above the axis)", of
    lines that leave them "(partly off the axis)"."""
    for line in ax.lines:
        label = str(line.get_label())
        y = np.asarray(line.get_ydata(), dtype=float)
        y = y[np.isfinite(y)]
        if label.startswith("_") or not y.size:
            continue
        if (y < bottom).all():
            line.set_label(f"{label} (below the axis)")
        elif (y > top).all():
            line.set_label(f"{label} (above the axis)")
        elif (y < bottom).any() or (y > top).any():
            line.set_label(f"{label} (partly off the axis)")


def _mark_like_best(ax, part: pd.DataFrame, layers, y, colour, marker) -> set[str]:
    """Hollow markers on the layers whose accuracy is not significantly different from the layer chosen for the
    pooling (``significant_vs_best`` False after Holm, the chosen one included), and an upward triangle above the
    layers significantly better than it on the test rows (the test is two-sided: a choice the training part got
    wrong must not read as a clear winner). Returns the kinds drawn ("like", "above")."""
    if "significant_vs_best" not in part.columns or part["significant_vs_best"].isna().all():
        return set()
    flags = part["significant_vs_best"].map(str)  # True/False, numpy's, or read back from a CSV as text
    like_best, differ = flags.eq("False").to_numpy(), flags.eq("True").to_numpy()
    chosen = like_best & part["p_vs_best"].isna().to_numpy(bool) if "p_vs_best" in part.columns else like_best
    above = differ & (y > y[chosen][0]) if chosen.sum() == 1 else np.zeros(len(flags), bool)
    drawn: set[str] = set()
    for kind, rows, shape, size, face, edge in (
        ("like", like_best, marker, 8, "white", 1.8),
        ("above", above, "^", 11, "none", 1.6),
    ):
        if rows.any():
            ax.plot(
                layers[rows],
                y[rows],
                marker=shape,
                markersize=size,
                linestyle="none",
                markerfacecolor=face,
                markeredgecolor=colour,
                markeredgewidth=edge,
                zorder=3.5,
            )
            drawn.add(kind)
    return drawn


MARK_LEGEND = {  # kind -> (marker, size, face, label) of ``_mark_like_best``'s marks in the legend
    "like": ("o", 7, "white", "hollow: not significantly different from its pooling's chosen layer"),
    "above": ("^", 9, "none", "triangle: significantly above its pooling's chosen layer (test rows)"),
}


def _legend_marks(ax, marks: set[str]) -> None:
    """The legend entries of ``_mark_like_best``'s marks."""
    for kind, (marker, size, face, label) in MARK_LEGEND.items():
        if kind in marks:
            ax.plot(
                [],
                [],
                marker=marker,
                markersize=size,
                linestyle="none",
                markerfacecolor=face,
                markeredgecolor=REFERENCE_GREY,
                label=label,
            )


def draw_references(ax, found: list[tuple[str, float]], layers: list[int]) -> list[float]:
    """Horizontal reference lines; one that coincides with an earlier one gets markers and says so."""
    styles = ["--", ":", "-.", (0, (5, 1, 1, 1, 1, 1))]
    drawn: list[tuple[str, float]] = []
    for (name, value), style in zip(found, styles, strict=False):
        colour = REFERENCE_GREY if style != ":" else OKABE_ITO["black"]
        same = [other for other, earlier in drawn if abs(earlier - value) < COINCIDE]
        shown = 0.0 if abs(value) < 0.005 else value  # a training mean's R² of -0.0001 reads 0.00, not -0.00
        label = f"{name}: {shown:.2f}" + (f" (= {same[0].split(' (')[0]})" if same else "")
        if same:  # on top of another line: markers along it keep it visible
            ax.plot(
                layers,
                [value] * len(layers),
                color=colour,
                linestyle=style,
                linewidth=1.4,
                marker="x",
                markersize=7,
                label=label,
                zorder=1.5,
            )
        else:
            ax.axhline(value, color=colour, linestyle=style, linewidth=1.4, label=label, zorder=1)
        drawn.append((name, value))
    return [value for _, value in found]


def _draw_control_curve(ax, rows: pd.DataFrame, best: pd.Series, metric: str) -> tuple[list[float], bool]:
    """The control task's own curve by layer at the pooling of ``best``, the chosen row (selectivity is the gap
    to it), when it varies by layer; a flat control stays one horizontal reference line. Returns (values, drawn)."""
    column = "control_accuracy" if metric == "accuracy" else f"control_{metric}"
    if column not in rows.columns or rows[column].isna().all():
        return [], False
    part = rows[rows["pooling"] == best["pooling"]].dropna(subset=["layer", column]).sort_values("layer", kind="stable")
    y = part[column].astype(float).to_numpy()
    if len(y) < 2 or float(np.ptp(y)) < COINCIDE:
        return [], False
    name = best.get("probe_pooling", best["pooling"])
    ax.plot(
        part["layer"].astype(int).to_numpy(),
        y,
        color=REFERENCE_GREY,
        linestyle="-.",
        marker="+",
        markersize=8,
        linewidth=1.4,
        label=f"control task by layer ({name})",
        zorder=2.5,
    )
    return list(y), True


def _draw_baseline_curve(ax, frame: pd.DataFrame, best: pd.Series, metric: str, classifier: str) -> list[float]:
    """The baseline features' own per-layer curve (``probe --baseline``), at the pooling of ``best`` (the main
    features' chosen row) when probed, else at that of their own chosen row (``chosen_row``, as ``references``)."""
    base = frame[(frame["features"] == "baseline") & (frame["kind"] == "single") & (frame["classifier"] == classifier)]
    if metric not in base.columns or base[metric].isna().all():
        return []
    base = base.dropna(subset=["layer", metric]).sort_values("layer", kind="stable")
    pooling = str(best.get("probe_pooling", best["pooling"]))
    if pooling not in set(base["pooling"]):  # its own row chosen on the training part, as its reference line's
        pooling = str(chosen_row(base, metric)[0]["pooling"])
    part = base[base["pooling"] == pooling]
    if "site" in part.columns and part["site"].nunique() > 1:
        part = part[part["site"] == part["site"].iloc[0]]
    y = part[metric].astype(float).to_numpy()
    ax.plot(
        part["layer"].astype(int).to_numpy(),
        y,
        color=REFERENCE_GREY,
        linestyle="--",
        marker="x",
        markersize=6,
        linewidth=1.6,
        label=f"baseline features by layer ({pooling})",
        zorder=2.5,
    )
    return list(y)


def plot_mdl(
    frame: pd.DataFrame,
    meta: dict | None = None,
    ax=None,
    classifier: str | None = None,
    value: str = "mdl_compression",
    legend: bool = True,
    title: bool | str = True,
):
    """MDL probe (``featx probe --mdl``): compression over the uniform code by layer, one line per pooling, and
    (dotted, in its colour) the control task's, the baseline it must beat.

    ``value="mdl_bits"`` draws the online codelength instead. Compression 1 (dashed) = no information.
    """
    import matplotlib.pyplot as plt

    frame, meta = load_results(frame, meta)
    if value not in frame.columns or pd.to_numeric(frame[value], errors="coerce").isna().all():
        raise InputError("these results have no MDL columns", "run featx probe --mdl")
    rows = layer_rows(frame, classifier)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        for index, pooling in enumerate(poolings_of(rows)):
            part = rows[rows["pooling"] == pooling]
            colour, marker = series_style(pooling, index)
            ax.plot(
                part["layer"].astype(int),
                part[value].astype(float),
                color=colour,
                marker=marker,
                markersize=5,
                linewidth=2,
                label=pooling,
                zorder=3,
            )
            _draw_mdl_control(ax, part, f"control_{value}", colour, first=index == 0)
        if value == "mdl_compression":
            ax.axhline(1.0, color=REFERENCE_GREY, linestyle="--", linewidth=1.4, label="uniform code (no information)")
        layers_all = sorted(set(rows["layer"].astype(int)))
        ax.set_xticks(layers_all)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel(
            "compression (uniform / online code)" if value == "mdl_compression" else "online codelength (bits)"
        )
        ax.grid(True, axis="y", alpha=0.3)
        if legend:
            legend_below(ax)
        if title:
            ax.set_title(title if isinstance(title, str) else "MDL probe (online code)", loc="left")
    return ax


def _draw_mdl_control(ax, part: pd.DataFrame, column: str, colour, first: bool) -> None:
    """One pooling's control-task MDL by layer (``control_mdl_compression`` or ``control_mdl_bits``), dotted in the
    pooling's colour; nothing where the run had no control task. The legend names it once."""
    if column not in part.columns or pd.to_numeric(part[column], errors="coerce").isna().all():
        return
    ax.plot(
        part["layer"].astype(int),
        part[column].astype(float),
        color=colour,
        linestyle=":",
        linewidth=1.4,
        label="control task (dotted, same colour)" if first else None,
        zorder=2,
    )
