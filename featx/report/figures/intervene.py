"""``featx intervene``'s figures (from its table, no featx.interventions import): the edited label's probe accuracy
by layer before (solid), after the edit (dashed) and after the random control of the same rank (dotted), one panel
per edited layer, 95% bands, the majority class grey; and the steering dose-response (the share of rows moved
toward the class, and the mean change of its score, against alpha, the bundle's direction and the random one)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

WHEN = (("before", "-", "o", "#0072B2"), ("after", "--", "v", "#D55E00"), ("control", ":", "s", "#009E73"))


def plot_intervention(table: pd.DataFrame, ax, edit_layer: int, label: str) -> None:
    """One edited layer's panel: ``label``'s probe accuracy before, after and after the control, by layer."""
    part = table[(table.kind == "probe") & (table.edit_layer == edit_layer) & (table.name == label)]
    part = part.sort_values("layer")
    for when, style, marker, colour in WHEN:
        ax.plot(part.layer, part[when], color=colour, linestyle=style, marker=marker, label=when)
        ax.fill_between(part.layer, part[f"{when}_low"], part[f"{when}_high"], color=colour, alpha=0.12, linewidth=0)
    if not part.majority.dropna().empty:
        ax.axhline(float(part.majority.iloc[0]), color="#666666", linestyle=":", linewidth=1.2, label="majority")
    ax.set_xticks(sorted(set(part.layer.astype(int))))
    ax.set_title(f"edit at layer {edit_layer}", fontsize=10)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.grid(alpha=0.3)


def plot_steering(table: pd.DataFrame, ax) -> None:
    """The share of rows moved toward the class against alpha, for the probe's and the random direction."""
    for (name, part), colour in zip(table.groupby("direction", sort=False), ("#D55E00", "#666666"), strict=False):
        part = part.sort_values("alpha")
        ax.plot(part.alpha, part.moved, color=colour, marker="o", label=f"{name} direction")
        ax.fill_between(part.alpha, part.moved_low, part.moved_high, color=colour, alpha=0.15, linewidth=0)
    ax.set_xlabel("alpha (added along the unit direction)")
    ax.set_ylabel("share of rows moved toward the class")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)


def plot_steering_change(table: pd.DataFrame, ax, read_at: str | None = None) -> None:
    """The mean change of the class's score (the answers' logit difference, or the bundle's score) against alpha,
    with its 95% interval, for the probe's and the random direction: where a random direction also moves every
    row a little, the share moved cannot tell them apart, and the size of the change can."""
    for (name, part), colour in zip(table.groupby("direction", sort=False), ("#D55E00", "#666666"), strict=False):
        part = part.sort_values("alpha")
        ax.plot(part.alpha, part.score_change, color=colour, marker="o", label=f"{name} direction")
        low, high = part.score_change_low, part.score_change_high
        ax.fill_between(part.alpha, low, high, color=colour, alpha=0.15, linewidth=0)
    ax.axhline(0.0, color="#666666", linestyle=":", linewidth=1)
    ax.set_xlabel("alpha (added along the unit direction)")
    ax.set_ylabel("mean change of the " + ("logit difference" if read_at == "answers" else "class's score"))
    ax.grid(alpha=0.3)


def intervention_figure(table: pd.DataFrame, meta: dict):
    """The whole figure of a run (a dose-response: the share moved and the mean change; or one panel per edited
    layer)."""
    import matplotlib.pyplot as plt

    if meta.get("kind") == "steer":
        fig, (moved, change) = plt.subplots(1, 2, figsize=(10.0, 3.6))
        plot_steering(table, moved)
        read_at = str(table.read_at.iloc[0]) if "read_at" in table and len(table) else None
        plot_steering_change(table, change, read_at)
        fig.suptitle(f"steering toward {meta.get('toward')} at layer {meta.get('at')}", fontsize=10)
        fig.tight_layout()
        return fig
    layers = list(dict.fromkeys(int(layer) for layer in table.edit_layer))
    fig, axes = plt.subplots(1, len(layers), figsize=(4.2 * len(layers) + 1.2, 3.6), squeeze=False, sharey=True)
    for ax, layer in zip(axes[0], layers, strict=True):
        plot_intervention(table, ax, layer, str(meta.get("label")))
    axes[0][0].set_ylabel(f"probe accuracy of '{meta.get('label')}'")
    axes[0][-1].legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def save_intervention_figure(table: pd.DataFrame, meta: dict, path: Path) -> Path:
    """The figure written as ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .style import save

    fig = intervention_figure(table, meta)
    try:
        return save(fig, path, formats=("png",))[0]
    finally:
        plt.close(fig)


__all__ = [
    "intervention_figure",
    "plot_intervention",
    "plot_steering",
    "plot_steering_change",
    "save_intervention_figure",
]
