"""Learning curves (``featx probe --train-sizes``): reading the curve file, the panel, its figure and
the short table the probe prints."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ...errors import InputError, StoreError
from ...io import read_csv
from ...options import Placeholder, on_command_line, spoken_value
from ..text.format import num
from .style import CYCLE, FORMATS, MARKERS, RC, REFERENCE_GREY, axes_or_new, legend_below, save

CURVE_REQUIRED = ("layer_spec", "pooling", "classifier", "n_train")


def _with_train_sizes(sizes: str) -> str:
    """The probe run that writes a learning curve, as the caller makes it: ``featx probe --train-sizes 0.5,1.0``,
    ``featx.probe(..., train_sizes='0.5,1.0')``."""
    given = spoken_value(None, "train_sizes", Placeholder(sizes) if sizes == "..." else sizes, "--train-sizes")
    return f"featx probe {given}" if on_command_line() else f"featx.probe(..., {given})"


def curve_metric(curve: pd.DataFrame) -> str:
    """``r2`` for the curves of a regression label, else ``accuracy``."""
    return "r2" if "r2" in curve.columns and "accuracy" not in curve.columns else "accuracy"


def is_curve_file(path: str | os.PathLike) -> bool:
    """A ``.curve.csv`` written by ``featx probe --train-sizes`` (by name, or by its columns)."""
    path = Path(path)
    if path.name.endswith(".curve.csv"):
        return True
    if path.suffix != ".csv" or not path.exists():
        return False
    try:
        columns = read_csv(path, nrows=0).columns
    except (ValueError, OSError):
        return False
    return "train_size" in columns and "n_train" in columns and "kind" not in columns


def read_curve(curve) -> pd.DataFrame:
    """The learning-curve table from a path or a DataFrame, checked."""
    if not isinstance(curve, pd.DataFrame):
        path = Path(curve)
        if not path.exists():
            raise StoreError(f"learning-curve file {path} does not exist", f"run {_with_train_sizes('...')}")
        try:
            curve = read_csv(path)
        except (ValueError, OSError) as err:
            raise StoreError(f"{path} cannot be read as a learning-curve file ({err})") from None
    missing = [column for column in (*CURVE_REQUIRED, curve_metric(curve)) if column not in curve.columns]
    if curve.empty or missing:
        raise InputError(
            "no learning-curve rows" + (f" (missing column(s) {', '.join(missing)})" if missing else ""),
            f"run {_with_train_sizes('0.1,0.25,0.5,1.0')}",
        )
    curve = curve.copy()
    for column in ("layer_spec", "pooling", "classifier"):
        curve[column] = curve[column].astype(str)
    return curve


def plot_learning_curves(
    curve,
    ax=None,
    pooling: str | None = None,
    classifier: str | None = None,
    legend: bool = True,
    title: bool | str = True,
    site: str | None = None,
):
    """Accuracy against training rows per fold (``featx probe --train-sizes``), one line per layer of one
    site (default: ``hidden`` when present)."""
    import matplotlib.pyplot as plt

    curve = read_curve(curve)
    if "site" in curve.columns:  # curve files from before sites hold hidden only
        sites = list(dict.fromkeys(curve["site"].astype(str)))
        site = site or ("hidden" if "hidden" in sites else sites[0])
        if site not in sites:
            raise InputError(f"no learning curves for site '{site}'", f"choose from {', '.join(sites)}")
        curve = curve[curve["site"].astype(str) == site]
    pooling = pooling or str(curve["pooling"].iloc[0])
    classifier = classifier or str(curve["classifier"].iloc[0])
    part = curve[(curve["pooling"] == pooling) & (curve["classifier"] == classifier)]
    metric = curve_metric(curve)
    with plt.rc_context(RC):
        ax = axes_or_new(ax)
        for index, (spec, rows) in enumerate(part.groupby("layer_spec", sort=False)):
            rows = rows.sort_values("n_train")
            colour, marker = CYCLE[index % len(CYCLE)], MARKERS[index % len(MARKERS)]
            ax.plot(rows["n_train"], rows[metric], color=colour, marker=marker, linewidth=2, label=f"layer {spec}")
            if rows[[f"{metric}_low", f"{metric}_high"]].notna().all().all():
                ax.fill_between(
                    rows["n_train"],
                    rows[f"{metric}_low"],
                    rows[f"{metric}_high"],
                    color=colour,
                    alpha=0.12,
                    linewidth=0,
                )
        _draw_baseline(ax, part, metric)
        ax.set_xscale("log")
        ax.set_xlabel("training rows (per fold)")
        ax.set_ylabel("R²" if metric == "r2" else "accuracy")
        ax.grid(True, alpha=0.3)
        if legend:
            legend_below(ax, ncol=4)
        if title:
            where = "" if site in (None, "hidden") else f"{site}, "
            ax.set_title(
                title if isinstance(title, str) else f"learning curves ({where}{pooling}, {classifier})", loc="left"
            )
    return ax


def _draw_baseline(ax, part: pd.DataFrame, metric: str) -> None:
    """Each training size's baseline (the ``baseline`` column: the majority class, for a number the training mean's
    R², fitted on the same subsampled rows), one grey dashed line; curve files from before the column draw none."""
    if "baseline" not in part.columns:
        return
    values = pd.to_numeric(part["baseline"], errors="coerce")
    base = values.groupby(part["n_train"]).mean().dropna().sort_index()  # one value per size: the same rows
    if base.empty:
        return
    name = "training mean (R²)" if metric == "r2" else "majority class"
    ax.plot(
        base.index,
        base.to_numpy(),
        color=REFERENCE_GREY,
        linestyle="--",
        marker="+",
        markersize=8,
        linewidth=1.4,
        label=f"{name}, same training rows",
        zorder=2.5,  # over the curves: a layer at chance (layer 0's cls) would otherwise hide it
    )


def learning_figure(
    curve,
    output: str | os.PathLike | None = None,
    formats: Iterable[str] = FORMATS,
    dpi: int = 150,
    title: str | None = None,
):
    """One learning-curve panel per (pooling, classifier) of the curve file; saved if ``output`` is given."""
    import matplotlib.pyplot as plt

    curve = read_curve(curve)
    if "site" in curve.columns and "hidden" in set(curve["site"].astype(str)):
        curve = curve[curve["site"].astype(str) == "hidden"]
    groups = list(dict.fromkeys(zip(curve["pooling"], curve["classifier"], strict=False)))
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 5), layout="constrained", squeeze=False)
        for ax, (pooling, classifier) in zip(axes[0], groups, strict=False):
            plot_learning_curves(curve, ax=ax, pooling=pooling, classifier=classifier)
        label = str(curve["label"].iloc[0]) if "label" in curve.columns else "label"
        fig.suptitle(title or f"learning curves · label: {label}", fontsize=13, x=0.01, ha="left")
        written = save(fig, output, formats, dpi) if output is not None else []
    return fig, written


def format_curve_table(curve, max_groups: int = 4) -> str:
    """Accuracy by training-set size, one line per (site, layer, pooling, classifier), and under them each size's
    baseline (the majority class, or the training mean's R², on the same rows; files written before the ``baseline``
    column print none): what the probe prints."""
    curve = read_curve(curve)
    sizes = sorted(set(curve["train_size"])) if "train_size" in curve.columns else sorted(set(curve["n_train"]))
    key = "train_size" if "train_size" in curve.columns else "n_train"
    by = [column for column in ("site", "pooling", "classifier") if column in curve.columns]
    metric = curve_metric(curve)
    lines = []
    for shown, (group, part) in enumerate(curve.groupby(by, sort=False)):
        if shown == max_groups:
            lines.append(
                f"... and {curve.groupby(by).ngroups - max_groups} more (pooling, classifier) groups in the file"
            )
            break
        header = ["layer"] + [f"{size:g}" for size in sizes]
        rows = []
        for spec, block in part.groupby("layer_spec", sort=False):
            values = dict(zip(block[key], block[metric], strict=False))
            rows.append([str(spec)] + [num(values.get(size)) for size in sizes])
        if "baseline" in part.columns:  # the same for every layer of a size: the same subsampled rows
            values = dict(zip(part[key], part["baseline"], strict=False))
            rows.append(["train mean" if metric == "r2" else "majority"] + [num(values.get(size)) for size in sizes])
        widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
        name = " · ".join(str(value) for value in (group if isinstance(group, tuple) else (group,)))
        lines += [
            f"learning curve ({name}): {'R²' if metric == 'r2' else 'accuracy'} by training size "
            f"({_size_unit(sizes) if key == 'train_size' else 'rows'})",
            "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip(),
        ]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return "\n".join(lines)


def _size_unit(sizes) -> str:
    """How ``--train-sizes`` values read: a size up to 1 is a fraction of the training part, above 1 a row count."""
    fractions, counts = any(size <= 1 for size in sizes), any(size > 1 for size in sizes)
    if fractions and counts:
        return "a fraction up to 1, a number of rows above 1"
    return "rows" if counts else "fraction"
