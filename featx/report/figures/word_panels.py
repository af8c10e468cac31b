"""What ``featx plot`` adds for word-level results (``featx probe --label upos``, ``--arcs``): the layer
summaries of the run's metadata, as marks on the layer curves and as a panel of scalar-mix weights."""

from __future__ import annotations

import math

import numpy as np

from .style import OKABE_ITO, RC, REFERENCE_GREY, axes_or_new, legend_below, series_style


def layer_summaries(meta: dict | None) -> dict:
    """``{pooling: summary}`` of a word-level run (empty for sentence-level results)."""
    summaries = (meta or {}).get("layer_summary") or {}
    return {
        str(pooling): summary
        for pooling, summary in summaries.items()
        if isinstance(summary, dict)
        and isinstance(summary.get("weights"), list)
        and isinstance(summary.get("layers"), list)
    }


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def mark_layer_summary(ax, meta: dict | None, pooling: str) -> None:
    """Vertical lines at the scalar mix's center of gravity and at the expected layer of ``pooling``."""
    summary = layer_summaries(meta).get(pooling)
    if summary is None:
        return
    center, expected = summary.get("center_of_gravity"), summary.get("expected_layer")
    if _finite(center):
        ax.axvline(
            center,
            color=OKABE_ITO["blue"],
            linestyle=(0, (1, 1)),
            linewidth=1.8,
            zorder=1.2,
            label=f"center of gravity ({pooling}): {center:.2f}",
        )
    if _finite(expected):
        ax.axvline(
            expected,
            color=OKABE_ITO["bluish_green"],
            linestyle="-.",
            linewidth=1.6,
            zorder=1.2,
            label=f"expected layer ({pooling}): {expected:.2f}",
        )


def plot_mix_weights(meta: dict | None, ax=None, title: bool | str = True):
    """The scalar-mix weights by layer, one group of bars per word pooling, centers of gravity marked."""
    import matplotlib.pyplot as plt

    summaries = layer_summaries(meta)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        width = 0.8 / max(1, len(summaries))
        for index, (pooling, summary) in enumerate(summaries.items()):
            colour, _ = series_style(pooling, index)
            layers = np.asarray(summary["layers"], dtype=float)
            shift = (index - (len(summaries) - 1) / 2) * width
            center = summary.get("center_of_gravity")
            label = pooling + (f" (center {center:.2f})" if _finite(center) else "")
            ax.bar(layers + shift, summary["weights"], width=width, color=colour, alpha=0.85, label=label, zorder=3)
            if _finite(center):
                ax.axvline(center, color=colour, linestyle=(0, (1, 1)), linewidth=1.6, zorder=2)
        if summaries:
            first = next(iter(summaries.values()))
            ax.axhline(
                1 / len(first["layers"]),
                color=REFERENCE_GREY,
                linestyle="--",
                linewidth=1.2,
                label="uniform weights",
                zorder=1,
            )
            ax.set_xticks(first["layers"])
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_ylabel("scalar-mix weight (softmax)")
        ax.grid(True, axis="y", alpha=0.3)
        legend_below(ax, ncol=2)
        if title:
            ax.set_title(title if isinstance(title, str) else "scalar mix: layer weights", loc="left")
    return ax
