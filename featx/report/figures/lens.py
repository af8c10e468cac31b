"""The logit lens figure: per layer, the lens accuracy and the probe's test accuracy (95% bands), with the
lens's mean logit difference on a second panel."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from .style import OKABE_ITO, RC, REFERENCE_GREY, save


def plot_lens(frame: pd.DataFrame, title: str = ""):
    """The figure of a lens table (``featx.lens``'s ``LensResult.table``)."""
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True, layout="constrained")
        layers = frame["layer"].to_numpy()
        for name, colour, marker, label in (
            ("lens", OKABE_ITO["vermillion"], "s", "logit lens (answer tokens)"),
            ("probe", OKABE_ITO["blue"], "o", "probe (logreg, trained on training rows)"),
        ):
            values = frame[f"{name}_accuracy"].to_numpy(dtype=float)
            top.plot(layers, values, color=colour, marker=marker, label=label)
            top.fill_between(
                layers, frame[f"{name}_accuracy_low"], frame[f"{name}_accuracy_high"], color=colour, alpha=0.15
            )
        chance = 1.0 / max(int(frame["n_answers"].iloc[0]), 1)
        top.axhline(chance, color=REFERENCE_GREY, linestyle=":", label=f"chance ({chance:.2f})")
        if "majority_accuracy" in frame.columns:  # a table written before the baseline was added has none
            majority = float(frame["majority_accuracy"].iloc[0])
            top.axhline(majority, color=REFERENCE_GREY, linestyle="--", label=f"majority class ({majority:.2f})")
        top.set_ylabel("test accuracy")
        top.set_title(title or "Logit lens beside the probe")
        bottom.plot(layers, frame["logit_diff"], color=OKABE_ITO["vermillion"], marker="s")
        bottom.fill_between(
            layers, frame["logit_diff_low"], frame["logit_diff_high"], color=OKABE_ITO["vermillion"], alpha=0.15
        )
        bottom.axhline(0.0, color=REFERENCE_GREY, linestyle=":")
        bottom.set_ylabel("logit difference\n(correct - best other)")
        bottom.set_xlabel("layer")
        from matplotlib.ticker import MaxNLocator

        bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
        top.legend(frameon=False, fontsize=9)
    return fig


def save_lens_figure(frame: pd.DataFrame, output: str | os.PathLike, title: str = "") -> list[Path]:
    """Draw the lens figure and write it as PNG and SVG beside ``output`` (its suffix replaced)."""
    import matplotlib.pyplot as plt

    fig = plot_lens(frame, title)
    try:
        return save(fig, output)
    finally:
        plt.close(fig)
