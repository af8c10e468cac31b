"""Figures of one layer's per-row predictions (``featx probe`` writes them beside its results): the confusion
matrix of a class label, and the predictions against the truth (with their residuals) of a regression label."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import StoreError
from ...io import read_csv
from .style import OKABE_ITO, RC, REFERENCE_GREY

LAYER_PREFIX = "layer_"


def plot_confusion(confusion: pd.DataFrame, ax, layer: str = "", how: str = ""):
    """Counts of (true, predicted) classes, each cell's colour its share of the true class's rows (so a small
    class is as readable as a large one), the count written in the cell, the diagonal outlined."""
    import matplotlib.pyplot as plt

    counts = confusion.to_numpy(dtype=float)
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    n = len(confusion.index)
    size = 9 if n <= 8 else 7 if n <= 14 else 5.5
    with plt.rc_context(RC):
        image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for i in range(counts.shape[0]):
            for j in range(counts.shape[1]):
                dark = shares[i, j] > 0.55
                ax.text(
                    j,
                    i,
                    f"{int(counts[i, j])}",
                    ha="center",
                    va="center",
                    fontsize=size,
                    color="white" if dark else "black",
                )
        ax.set_xticks(range(len(confusion.columns)), [str(c) for c in confusion.columns], rotation=45, ha="right")
        ax.set_yticks(range(n), [str(c) for c in confusion.index])
        ax.set_xlabel("predicted class")
        ax.set_ylabel("true class")
        ax.figure.colorbar(image, ax=ax, fraction=0.05, pad=0.02, label="share of the true class's rows")
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.tick_params(length=0)
        where = f" at layer {layer}" if layer else ""
        ax.set_title(f"confusion matrix{where}" + (f" ({how})" if how else ""), loc="left")
    return ax


def read_regression_predictions(path: Path, layer: str) -> tuple[np.ndarray, np.ndarray]:
    """``(truth, prediction)`` of one layer from a regression predictions file."""
    try:
        frame = read_csv(path, dtype={"id": str}, keep_default_na=False)
        truth = frame["label"].astype(float).to_numpy()
        predicted = frame[LAYER_PREFIX + str(layer)].astype(float).to_numpy()
    except (KeyError, ValueError, OSError) as err:
        raise StoreError(f"{path} is not a featx regression predictions file ({err})") from None
    return truth, predicted


def plot_residuals(truth: np.ndarray, predicted: np.ndarray, axes, layer: str = "", how: str = ""):
    """Left: prediction against truth with the identity line; right: residual (prediction - truth) against
    truth with zero dashed. A probe that only learns the mean lies flat on the left, sloped on the right."""
    import matplotlib.pyplot as plt

    left, right = axes
    residual = predicted - truth
    low, high = float(min(truth.min(), predicted.min())), float(max(truth.max(), predicted.max()))
    with plt.rc_context(RC):
        left.scatter(truth, predicted, s=14, alpha=0.6, color=OKABE_ITO["blue"], linewidths=0)
        left.plot(
            [low, high], [low, high], color=REFERENCE_GREY, linestyle="--", linewidth=1.2, label="prediction = truth"
        )
        left.set_xlabel("true value")
        left.set_ylabel("prediction")
        left.legend(frameon=False, loc="upper left")
        right.scatter(truth, residual, s=14, alpha=0.6, color=OKABE_ITO["vermillion"], linewidths=0)
        right.axhline(0, color=REFERENCE_GREY, linestyle="--", linewidth=1.2)
        right.set_xlabel("true value")
        right.set_ylabel("residual (prediction − truth)")
        for ax in axes:
            ax.grid(True, alpha=0.3)
        where = f"layer {layer}" + (f" ({how})" if how else "")
        left.set_title(f"{where}: predictions against the truth", loc="left")
        right.set_title(f"residuals ({len(truth):,} test rows)", loc="right")
    return axes


__all__ = ["plot_confusion", "plot_residuals", "read_regression_predictions"]
