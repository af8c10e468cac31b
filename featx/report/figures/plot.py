"""The figure ``featx plot`` writes for one results file: curves, heatmap and (with ``--mdl``) the MDL
panel, one row of panels per classifier probed."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ...errors import InputError
from ...options import on_command_line, spoken_command, spoken_value
from ..load import (
    METRIC_NAMES,
    check_metric,
    default_classifier,
    default_metric,
    describe,
    layer_rows,
    load_results,
    poolings_of,
    references,
)
from .curves import plot_layer_curves, plot_mdl
from .heatmap import plot_heatmap
from .style import FORMATS, RC, save
from .word_panels import layer_summaries, plot_mix_weights


def has_mdl(frame: pd.DataFrame) -> bool:
    return "mdl_compression" in frame.columns and pd.to_numeric(frame["mdl_compression"], errors="coerce").notna().any()


def classifiers_of(frame: pd.DataFrame, meta: dict | None = None) -> list[str]:
    """The classifiers with single-layer rows of the main features: the one the run chose first (``meta``'s
    ``selected``), then by their best ``selection_score`` (on the training part), else in table order; never by a
    score on the test rows, which would make the figure's order a choice made on them."""
    rows = frame[(frame["features"] == "main") & (frame["kind"] == "single")]
    names = list(dict.fromkeys(rows["classifier"].astype(str)))
    if "selection_score" in rows.columns:
        scores = pd.to_numeric(rows["selection_score"], errors="coerce").groupby(rows["classifier"].astype(str)).max()
        names.sort(key=lambda name: -scores[name] if pd.notna(scores[name]) else float("inf"))  # ties: table order
    selected = (meta or {}).get("selected")
    return sorted(names, key=lambda name: not isinstance(selected, dict) or name != selected.get("classifier"))


def _row_height(frame: pd.DataFrame, classifier: str, metric: str) -> float:
    """Inches for one row of panels: taller when the curves' legend (under the panel) has many entries,
    so that the layout never has to squeeze the axes or push a label off the figure."""
    entries = len(poolings_of(layer_rows(frame, classifier))) + len(references(frame, metric, classifier)) + 3
    return max(5.4, 3.8 + 0.3 * entries)


def with_baseline(frame: pd.DataFrame, baseline) -> pd.DataFrame:
    """``frame`` plus the probe rows of a second results file, marked as baseline features."""
    if baseline is None:
        return frame
    base_frame, _ = load_results(baseline)
    _check_same_probe(frame, base_frame, baseline)
    base_frame = base_frame[~base_frame["kind"].isin(["majority", "lexical"])].assign(features="baseline")
    return pd.concat([frame, base_frame], ignore_index=True)


def _probed(frame: pd.DataFrame) -> tuple[str, str]:
    """(label, task) of a results table, from its first row (``task`` is absent from older results)."""
    first = frame.iloc[0] if len(frame) else pd.Series(dtype=object)
    task = first.get("task")
    return str(first.get("label", "?")), str(task) if isinstance(task, str) and task else "classification"


def _check_same_probe(frame: pd.DataFrame, base_frame: pd.DataFrame, baseline) -> None:
    """A baseline drawn beside a run must probe the same label as the same task (else it is a line of another
    quantity, or, across tasks, silently no line at all)."""
    (label, task), (base_label, base_task) = _probed(frame), _probed(base_frame)
    if (label, task) != (base_label, base_task):
        name = Path(baseline).name if isinstance(baseline, (str, os.PathLike)) else "the baseline results"
        cli = on_command_line()
        probed = spoken_command(
            "probe", "OTHER.h5" if cli else "other_features", spoken_value(None, "label", label, "--label")
        )
        raise InputError(
            f"{spoken_value(None, 'baseline', name, '--baseline')} probes '{base_label}' ({base_task}), these "
            f"results '{label}' ({task})",
            f"give the results of the same label probed on the second features file ({probed}), or "
            f"{'featx compare' if cli else 'featx.report.compare_results'} to set different runs side by side",
        )


def _draw_row(row, frame: pd.DataFrame, meta: dict, name: str, metric: str, where: str, scale: str, third):
    """One classifier's panels: curves, heatmap, and the MDL panel or the scalar-mix weights (``third``)."""
    plot_layer_curves(
        frame,
        meta,
        ax=row[0],
        metric=metric,
        classifier=name,
        title=f"{METRIC_NAMES.get(metric, metric)} by layer{where}",
    )
    plot_heatmap(
        frame,
        meta,
        ax=row[1],
        metric=metric,
        classifier=name,
        scale=scale,
        title=f"layer × pooling{where}" if where else True,
    )
    if third == "mdl":  # featx probe --mdl: the MDL panel on the right
        plot_mdl(frame, meta, ax=row[2], classifier=name)
    elif third == "mix":
        plot_mix_weights(meta, ax=row[2])


def _prepared(results, meta: dict | None, metric: str | None, baseline) -> tuple[pd.DataFrame, dict, str]:
    """The table (with the baseline's rows), its meta and the metric ``figure`` draws, all checked."""
    frame, meta = load_results(results, meta)
    frame = with_baseline(frame, baseline)
    metric = metric or default_metric(frame, meta)  # the run's own metric, else accuracy or R²
    check_metric(frame, metric)
    return frame, meta, metric


def check_figure(results, metric: str | None = None, classifier: str | None = None, baseline=None) -> None:
    """Raise what ``figure`` would refuse about its input (a results file it cannot read, a baseline of another
    label, a metric or classifier the results lack) without drawing: ``featx plot`` checks every file first."""
    frame, _, _ = _prepared(results, None, metric, baseline)
    if classifier:
        layer_rows(frame, classifier)


def figure(
    results,
    meta: dict | None = None,
    metric: str | None = None,
    classifier: str | None = None,
    output: str | os.PathLike | None = None,
    formats: Iterable[str] = FORMATS,
    dpi: int = 150,
    baseline=None,
    scale: str = "full",
):
    """The main panels side by side (curves, heatmap) under one title; saved if ``output`` is given.

    Results of ``featx probe --mdl`` get a third panel, the MDL compression by layer. Results of several
    classifiers (``--classifier logreg,svm``) get one row of panels each unless ``classifier`` picks one.
    ``metric`` defaults to the one the run chose its best layer by (``default_metric``).
    ``baseline`` optionally adds a second results table (e.g. probes of a random-init model), drawn as its
    own per-layer curve and its best value as a reference line. ``scale`` is the heatmap's colour scale
    (``full``, ``robust`` or ``row``). Returns ``(figure, [written paths])``.
    """
    import matplotlib.pyplot as plt

    frame, meta, metric = _prepared(results, meta, metric, baseline)
    chosen = [classifier] if classifier else (classifiers_of(frame, meta) or [default_classifier(frame, meta)])
    mdl = has_mdl(frame)
    mixes = bool(layer_summaries(meta))  # word-level runs: the scalar-mix weights
    n = len(chosen)
    with plt.rc_context(RC):
        columns = 3 if mdl or mixes else 2
        height = max(_row_height(frame, name, metric) for name in chosen)
        fig, axes = plt.subplots(
            n,
            columns,
            figsize=(15 if columns == 3 else 12, height * n),  # at most 2250 px wide at the default 150 dpi
            squeeze=False,
            width_ratios=[1.15, 1, 1][:columns],
            layout="constrained",
        )
        for row, name in zip(axes, chosen, strict=False):
            where = f" — {name} probe" if n > 1 else ""
            _draw_row(row, frame, meta, name, metric, where, scale, "mdl" if mdl else "mix" if mixes else None)
        title = describe(frame, meta, chosen[0])
        if n > 1:
            title = title.replace(f"probe: {chosen[0]}", f"probes: {', '.join(chosen)} (one row each)")
        fig.suptitle(title, fontsize=13, x=0.01, ha="left")
        written = save(fig, output, formats, dpi) if output is not None else []
    return fig, written
