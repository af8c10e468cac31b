"""Colours, markers, matplotlib settings and saving: what every featx figure shares.

Colours are the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies),
with a fixed colour and marker per pooling so the same pooling looks the same in every figure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import StoreError

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
POOLING_STYLE = {
    "cls": (OKABE_ITO["blue"], "o"),
    "mean": (OKABE_ITO["vermillion"], "s"),
    "max": (OKABE_ITO["bluish_green"], "^"),
    "last": (OKABE_ITO["reddish_purple"], "D"),
    "pooler": (OKABE_ITO["orange"], "v"),
    "first": (OKABE_ITO["sky_blue"], "P"),  # word poolings: first subword (last and mean as above)
}
# For class labels and poolings featx does not know: yellow last, it is faint on white.
CYCLE = [
    OKABE_ITO[name]
    for name in ("blue", "vermillion", "bluish_green", "reddish_purple", "orange", "sky_blue", "black", "yellow")
]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
REFERENCE_GREY = "#555555"
SITE_LINESTYLES = ["-", "--", ":", "-."]
FORMATS = ("png", "svg")

RC: dict[RcKeyType, Any] = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9.5,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text in the SVG: searchable, and small
    "svg.hashsalt": "featx",  # stable ids, so the same results give the same SVG
    "text.parse_math": False,  # a "$" in a label, class or model name is text: an unbalanced one ended the run
}


def axes_or_new(ax):
    """``ax``, or the axes of a new figure in featx's style when it is None."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        _, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    return ax


def series_style(pooling: str, index: int) -> tuple[str, str]:
    """``(colour, marker)`` of a series: fixed per known pooling, else the ``index``-th of the cycle."""
    if " · " in pooling:  # a site × pooling series keeps its pooling's colour and marker
        pooling = pooling.split(" · ", 1)[1]
    return POOLING_STYLE.get(pooling, (CYCLE[index % len(CYCLE)], MARKERS[index % len(MARKERS)]))


def ring(ax, x, y, size: float, width: float, zorder: int, **options):
    """Open black circles around the points ``(x, y)``: how a figure marks a row for comparison (the best on the
    test rows, a significant difference) without filling over the marker beneath."""
    return ax.plot(
        x,
        y,
        marker="o",
        markersize=size,
        markerfacecolor="none",
        markeredgecolor=OKABE_ITO["black"],
        markeredgewidth=width,
        linestyle="none",
        zorder=zorder,
        **options,
    )


def legend_below(ax, ncol: int = 3, **options):
    """A legend under the axes that stays inside the figure: as many columns as fit the axes' width.

    Long entries (reference lines with a baseline, say) in three centred columns grew wider than the
    axes and were clipped at the figure's left edge; the legend now starts at the axes' left edge and
    drops columns until its measured width fits (slightly wider than the axes is fine).
    """
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    renderer = ax.figure.canvas.get_renderer()
    allowed = ax.get_window_extent(renderer).width * 1.15
    legend = None
    for columns in range(max(1, min(ncol, len(labels))), 0, -1):
        legend = ax.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(0.0, -0.14),
            ncol=columns,
            frameon=False,
            columnspacing=1.2,
            handlelength=2.2,
            **options,
        )
        if legend.get_window_extent(renderer).width <= allowed:
            return legend
    import textwrap  # one column is still too wide: wrap the longest entries

    wrapped = [textwrap.fill(label, 50) if len(label) > 55 else label for label in labels]
    return ax.legend(
        handles,
        wrapped,
        loc="upper left",
        bbox_to_anchor=(0.0, -0.14),
        ncol=1,
        frameon=False,
        handlelength=2.2,
        **options,
    )


def save(fig, output: str | os.PathLike, formats: Iterable[str] = FORMATS, dpi: int = 150) -> list[Path]:
    """Write ``fig`` once per format, replacing the suffix of ``output`` (``write_figure``)."""
    written: list[Path] = []
    for extension in formats:
        extension = extension.lstrip(".")
        target = Path(output).with_suffix(f".{extension}")
        try:
            write_figure(fig, target, dpi=dpi)
        except OSError as err:
            raise StoreError(f"cannot write {target}: {err}", "check the directory exists and is writable") from None
        written.append(target)
    return written


def write_figure(fig, target: Path, **options: Any) -> None:
    """``fig.savefig(target, **options)``, its format the suffix's, through ``atomic_write`` (a fresh temporary
    file renamed into place): ``savefig`` would open the name itself and write through a link planted there.
    The figure carries featx's mark (``featx.own_files.figure_metadata``: a run may draw it again) and, as an SVG,
    no date (the same figure, the same bytes)."""
    from ...own_files import figure_metadata
    from ...safe_files import atomic_write

    kind = target.suffix.lstrip(".")
    metadata = {**figure_metadata(kind), **(options.pop("metadata", None) or {})}
    if metadata:  # formats without metadata (JPEG...) take none
        options["metadata"] = metadata
    if kind == "svg":
        text = _svg(fig, **options)
        atomic_write(target, lambda handle: handle.write(text.encode("utf-8")))
    else:
        atomic_write(target, lambda handle: _drawn(fig, handle, kind, **options))


def svg_text(fig) -> str:
    """The figure as an SVG element (no XML prolog or DOCTYPE) to embed in an HTML page."""
    text = _svg(fig, metadata={"Date": None})
    return text[text.index("<svg") :]


def _svg(fig, **options: Any) -> str:
    """The figure's SVG document, every text in it XML (``printable``: a control character is no XML character)."""
    import io

    from ...errors import printable

    buffer = io.StringIO()
    _drawn(fig, buffer, "svg", **options)
    return printable(buffer.getvalue())


def _drawn(fig, handle, kind: str, **options: Any) -> None:
    """``fig.savefig`` with every text drawn as written (``as_written``)."""
    import matplotlib.pyplot as plt

    as_written(fig)
    with plt.rc_context({"text.parse_math": False}):  # the tick labels made while drawing too
        fig.savefig(handle, format=kind, **options)


def as_written(fig) -> None:
    """Every text of ``fig`` (tick labels too) drawn as written: never read as mathematics (a ``$`` in a label,
    class or model name; an unbalanced one ended the run), its unshown characters escaped (``printable``: a control
    character is no XML character, half of a surrogate pair cannot be measured) and cut at ``MAX_TEXT`` characters."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for text in fig.findobj(Text):
        text.set_parse_math(False)
        if (shown := drawable(text.get_text())) != text.get_text():
            text.set_text(shown)
    for axis in (axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)):  # tick labels, set while drawing
        for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [drawable(label) for label in formatter.seq]
            elif isinstance(formatter, FuncFormatter) and not isinstance(formatter.func, _Printable):
                formatter.func = _Printable(formatter.func)  # set_xticks(ticks, labels) gives one


MAX_TEXT = 500  # characters of one text of a figure: a label or model name of 200,000 took 36 s to draw


def drawable(text: str) -> str:
    """``text`` as a figure draws it: ``printable``, cut at ``MAX_TEXT`` characters."""
    from ...errors import printable

    shown = printable(text)
    return shown if len(shown) <= MAX_TEXT else shown[: MAX_TEXT - 1] + "…"


class _Printable:
    """A tick formatter's function whose labels are ``drawable``."""

    def __init__(self, func: Any):
        self.func = func

    def __call__(self, value: Any, position: Any = None) -> str:
        return drawable(self.func(value, position))


def default_output(results_path: str | os.PathLike) -> Path:
    """Where ``featx plot`` puts the figure: beside the results, same stem (``x.probe.csv`` -> ``x.probe.png``)."""
    return Path(results_path).with_suffix(".png")
