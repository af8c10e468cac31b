"""The cosine baseline of sentence-pair results (``featx/probing/pairs.py``) in the layer figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .style import REFERENCE_GREY


def draw_cosine_baseline(ax, meta: dict, best: pd.Series, metric: str) -> list[float]:
    """The zero-parameter cos(u, v) curve by layer, at the pooling of ``best`` (the chosen row), when the results
    hold it in ``metric`` (Spearman or Pearson of a regression label, accuracy of a class label); else nothing."""
    baseline = (meta or {}).get("cosine_baseline") or []
    if not baseline or metric not in baseline[0]:
        return []
    pooling = str(best["pooling"])
    part = sorted((row for row in baseline if row["pooling"] == pooling), key=lambda row: row["layer"])
    if not part:
        return []
    layers = [row["layer"] for row in part]
    values = [np.nan if row[metric] is None else float(row[metric]) for row in part]
    ax.plot(
        layers,
        values,
        color=REFERENCE_GREY,
        linestyle=":",
        marker="+",
        markersize=8,
        linewidth=1.6,
        label=f"cosine baseline by layer ({pooling})",
        zorder=2.5,
    )
    return [value for value in values if np.isfinite(value)]
