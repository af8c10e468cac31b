"""The layer × pooling grid of a metric, with every value written in its cell.

The default colour scale (``scale="full"``) spans the cells' own minimum to maximum on cividis, a perceptually
uniform colour map, so that equal steps in value look equally different and no two distant values share a
colour (a range narrower than 0.01 is widened to 0.01 around its middle, so noise is not painted as contrast);
the number in each cell is always the absolute value. ``scale="robust"`` spans the informative cells
only (median ± 3 IQR, clipped to the data): one at-chance cell (the ``[CLS]`` vector at layer 0) then no longer
flattens the others, but the cells below the range all take its lowest colour (the colour bar's arrow says
so). ``scale="row"`` colours each row from its own minimum to its own maximum. A cell without a value (a
constant vector, e.g. ``cls``/``pooler`` at layer 0, gives the probe nothing to score) is blank with a dash,
and a note under the grid says why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import InputError
from ..load import METRIC_NAMES, chosen_row, layer_results, poolings_of, series_name
from .style import OKABE_ITO, RC, axes_or_new

SCALES = ("full", "robust", "row")
MIN_SPAN = 0.01  # the narrowest colour range
SCALE_NOTES = {
    "full": "colour: min–max of the cells, cividis (perceptually uniform)",
    "robust": "colour: median ± 3 IQR of the cells; lower cells share the lowest colour",
    "row": "colour: within each row",
}
BLANK_NOTE = "– = no score: the vector is constant over the rows (e.g. cls/pooler at layer 0)"


def colour_range(data: np.ndarray, scale: str = "full") -> tuple[float, float]:
    """``(vmin, vmax)`` of the colour scale for the finite cells of ``data`` (see the module docstring)."""
    finite = data[np.isfinite(data)]
    if not finite.size:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    if scale == "robust" and finite.size >= 4:
        q1, median, q3 = np.percentile(finite, [25, 50, 75])
        spread = max(float(q3 - q1), 0.01)
        low = max(low, float(median) - 3 * spread)
    if high - low < MIN_SPAN:  # differences below 0.01 (noise at three decimals) are not painted as large ones
        middle = (high + low) / 2
        low, high = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
    return low, high


def _grid(rows: pd.DataFrame, metric: str) -> tuple[list[str], list[int], np.ndarray]:
    poolings = poolings_of(rows)
    layers = sorted(set(rows["layer"].astype(int)))
    grid = (
        rows.assign(layer=rows["layer"].astype(int))
        .pivot_table(index="pooling", columns="layer", values=metric, aggfunc="first")
        .reindex(index=poolings, columns=layers)
    )
    return poolings, layers, grid.to_numpy(dtype=float)


def _row_normalised(data: np.ndarray) -> np.ndarray:
    out = np.full_like(data, np.nan)
    for i, row in enumerate(data):
        finite = row[np.isfinite(row)]
        if finite.size:
            span = float(finite.max() - finite.min())
            out[i] = (row - finite.min()) / span if span > 1e-12 else 0.5
    return out


def plot_heatmap(
    frame: pd.DataFrame,
    meta: dict | None = None,
    ax=None,
    metric: str = "accuracy",
    classifier: str | None = None,
    colorbar: bool = True,
    title: bool | str = True,
    scale: str = "full",
):
    """A pooling × layer grid of ``metric`` with every value written in its cell; best cell outlined."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    if scale not in SCALES:
        raise InputError(f"heatmap scale '{scale}' is not known", f"choose one of: {', '.join(SCALES)}")
    frame, meta, classifier, rows = layer_results(frame, meta, metric, classifier)
    poolings, layers, data = _grid(rows, metric)
    colours = _row_normalised(data) if scale == "row" else data
    vmin, vmax = (0.0, 1.0) if scale == "row" else colour_range(data, scale)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        cmap = mpl.colormaps["cividis"]
        image = ax.imshow(np.ma.masked_invalid(colours), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        _write_values(ax, data, colours, cmap, vmin, vmax, len(layers))
        _outline_best(ax, rows, metric, poolings, layers, meta)
        ax.set_xticks(range(len(layers)), [str(layer) for layer in layers])
        ax.set_yticks(range(len(poolings)), poolings)
        blank = bool(np.isnan(data).any())
        ax.set_xlabel("layer" + (f"\n{BLANK_NOTE}" if blank else ""))
        ax.set_ylabel(series_name(rows))
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.tick_params(length=0)
        name = METRIC_NAMES.get(metric, metric)
        if colorbar:
            clipped = scale != "row" and np.nanmin(data) < vmin - 1e-9 if np.isfinite(data).any() else False
            label = f"{name}, each row from its min to its max" if scale == "row" else name
            ax.figure.colorbar(
                image, ax=ax, fraction=0.05, pad=0.02, label=label, extend="min" if clipped else "neither"
            )
        if title:
            heading = title if isinstance(title, str) else f"{name}: layer × {series_name(rows)}"
            ax.set_title(f"{heading}\n{SCALE_NOTES[scale]}", loc="left")  # the scale in use, on its own line
    return ax


def _write_values(ax, data, colours, cmap, vmin, vmax, n_layers) -> None:
    size = 9.5 if n_layers <= 8 else 8 if n_layers <= 13 else 6.5
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            value = data[i, j]
            if not np.isfinite(value):
                ax.text(j, i, "–", ha="center", va="center", fontsize=size, color="#666666")
                continue
            position = min(max((colours[i, j] - vmin) / (vmax - vmin), 0.0), 1.0)
            red, green, blue, _ = cmap(position)
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(
                j,
                i,
                f"{value + 0.0:.2f}".replace("-0.00", "0.00"),
                ha="center",
                va="center",
                fontsize=size,
                color="white" if dark else "black",
            )


def _outline_best(ax, rows, metric, poolings, layers, meta) -> None:
    from matplotlib.patches import Rectangle

    best, _ = chosen_row(rows, metric, meta)
    bi, bj = poolings.index(best["pooling"]), layers.index(int(best["layer"]))
    ax.add_patch(
        Rectangle((bj - 0.5, bi - 0.5), 1, 1, fill=False, edgecolor=OKABE_ITO["vermillion"], linewidth=2.5, zorder=3)
    )
