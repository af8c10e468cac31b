"""The figure of a structural probe run (``featx plot X.distance.structural.json``): each measure by layer, one line
per word pooling with its 95% band, the baseline (linear chain or word position) as a horizontal line with its band,
the layer chosen on the training sentences starred and, when it differs, the best on the test sentences ringed."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pandas as pd

from ...errors import InputError
from ..load import model_name
from ..structural import MEASURE_NAMES, StructuralResults, load_structural
from .curves import draw_references, draw_series, finish_layer_axes, star_row
from .style import FORMATS, RC, REFERENCE_GREY, axes_or_new, legend_below, ring, save


def structural_results(results) -> StructuralResults:
    """``results`` as a ``StructuralResults``: itself, or read from a path (``load_structural``)."""
    if isinstance(results, StructuralResults):
        return results
    if isinstance(results, (str, os.PathLike)):
        return load_structural(results)
    raise InputError(f"cannot plot {type(results).__name__}: give structural results or their path")


def check_measure(results: StructuralResults, measure: str | None) -> tuple[str, ...]:
    """The measures drawn: both, or ``measure`` when it is one of the run's (else an ``InputError``)."""
    if measure is None:
        return results.measures
    if measure not in results.measures:
        raise InputError(
            f"metric '{measure}' is not in these {results.mode} structural results; they have: "
            + ", ".join(results.measures),
            "choose one of those with --metric, or leave it out for both",
        )
    return (measure,)


def plot_structural(results, measure: str | None = None, ax=None, legend: bool = True, title: bool | str = True):
    """One measure (default: the one the layer was chosen in) against layer, one line per pooling with its band,
    the baseline's line and band, the chosen row starred and the best on test ringed when it differs."""
    import matplotlib.pyplot as plt

    results = structural_results(results)
    measure = check_measure(results, measure or results.selection_measure)[0]
    rows = results.probes  # a "$" in a pooling's name is drawn as written (RC: text.parse_math off)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        core, _ = draw_series(ax, rows, measure)
        values = _draw_baseline(ax, results, rows, measure)
        _mark_choices(ax, results, measure)
        finish_layer_axes(ax, rows, core, values, measure)
        ax.set_ylabel(MEASURE_NAMES[measure])
        if legend:
            legend_below(ax)
        if title:
            ax.set_title(title if isinstance(title, str) else f"{MEASURE_NAMES[measure]} by layer", loc="left")
    return ax


def _draw_baseline(ax, results: StructuralResults, rows: pd.DataFrame, measure: str) -> list[float]:
    """The baseline's horizontal line (``draw_references``) and its 95% band; returns the values drawn."""
    value = float(results.baseline[measure])
    if value != value:  # no baseline value (no test sentence of a scored length): no line
        return []
    layers = sorted(set(rows["layer"].astype(int)))
    values = draw_references(ax, [(f"{results.baseline_name} baseline", value)], layers)
    low, high = float(results.baseline[f"{measure}_low"]), float(results.baseline[f"{measure}_high"])
    if low == low and high == high:
        ax.axhspan(low, high, color=REFERENCE_GREY, alpha=0.1, linewidth=0, zorder=0.5)
        values += [low, high]
    return values


def _mark_choices(ax, results: StructuralResults, measure: str) -> None:
    """The star on the row chosen on the training sentences, and a ring on the best on test when it differs."""
    chosen, best = results.chosen, results.best_on_test
    if chosen is not None and chosen[measure] == chosen[measure]:
        star_row(ax, chosen, measure, "chosen on the training sentences")
    if best is None or best[measure] != best[measure]:
        return
    if chosen is not None and (best["layer"], best["pooling"]) == (chosen["layer"], chosen["pooling"]):
        return
    ring(
        ax,
        [int(best["layer"])],
        [float(best[measure])],
        size=14,
        width=1.6,
        zorder=4,
        label=f"best on the test sentences ({MEASURE_NAMES[results.selection_measure]}; not a fair choice): "
        f"layer {int(best['layer'])}, {best['pooling']}",
    )


def structural_title(results: StructuralResults) -> str:
    """The figure's title: model, mode and rank, sentences and words, evaluation."""
    meta = results.meta
    parts = [model_name({"model": results.model}), f"structural probe: {results.mode}"]
    if meta.get("rank") is not None:
        parts[-1] += f" (rank {meta['rank']})"
    if meta.get("n_sentences") is not None:
        words = f" ({meta['n_words']} words)" if meta.get("n_words") is not None else ""
        parts.append(f"{meta['n_sentences']} sentences{words}")
    if meta.get("evaluation"):
        parts.append(str(meta["evaluation"]))
    return " · ".join(parts)


def structural_figure(
    results,
    measure: str | None = None,
    output: str | os.PathLike | None = None,
    formats: Iterable[str] = FORMATS,
    dpi: int = 150,
):
    """One panel per measure (both, or ``measure``) side by side under one title; saved if ``output`` is given.
    Returns ``(figure, [written paths])``."""
    import matplotlib.pyplot as plt

    results = structural_results(results)
    measures = check_measure(results, measure)
    height = max(5.4, 4.2 + 0.3 * (results.probes["pooling"].nunique() + 3))
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(measures), figsize=(6.5 * len(measures), height), layout="constrained")
        for ax, name in zip(list(axes) if len(measures) > 1 else [axes], measures, strict=True):
            plot_structural(results, name, ax=ax)
        fig.suptitle(structural_title(results), fontsize=13, x=0.01, ha="left")
        written = save(fig, output, formats, dpi) if output is not None else []
    return fig, written


__all__ = ["check_measure", "plot_structural", "structural_figure", "structural_results", "structural_title"]
