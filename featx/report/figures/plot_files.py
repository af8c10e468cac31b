"""What ``featx plot`` writes: one figure per results file (a learning-curve figure for a ``.curve.csv``, the
measures by layer for structural probe results), named beside the results or under ``-o``, and with ``compare`` one
figure of all the files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ...checks import path_like, whole
from ...errors import InputError
from ...options import Check, Options, keywords_of, normalise, option, spoken, spoken_value
from ..files import check_redrawn, make_folder, results_files
from ..structural import is_structural
from .heatmap import SCALES
from .style import FORMATS, RC, default_output, save


def _one_figure_per_output(config: PlotConfig) -> None:
    output = config.output
    if output is not None and len(config.results) > 1 and Path(output).suffix:
        raise InputError(  # -o as the command line's user typed it, output='x.png' from Python
            f"{spoken_value(None, 'output', str(output), '-o')} names one figure but {len(config.results)} results "
            "files were given",
            f"pass a directory to {spoken(None, 'output', '-o')}, or one results file",
        )


def _known_scale(config: PlotConfig) -> None:
    if config.heatmap_scale not in SCALES:
        raise InputError(f"heatmap scale '{config.heatmap_scale}' is not known", f"choose one of: {', '.join(SCALES)}")


@dataclass(frozen=True)
class PlotConfig(Options):
    """The results files ``featx plot`` draws and how: ``output`` is a figure path (one results file) or a
    folder; by default each figure goes beside its results file, same name."""

    results: tuple = ()
    output: str | os.PathLike | None = option(
        None,
        flag=("-o", "--output"),
        kind="path",
        help="Figure path (its suffix is replaced by .png and .svg), or a directory. "
        "Default: beside each results file, same name.",
    )
    metric: str | None = option(  # None: each results file's own metric (``load.default_metric``)
        None,
        flag="--metric",
        help="accuracy, macro_f1, balanced_accuracy, selectivity, r2, spearman, ... "
        "(default: the metric the run chose its best layer by; accuracy, or R² for regression). Structural "
        "results: uuas, dspr, root_accuracy or nspr draws that measure only (default: both).",
    )
    classifier: str | None = option(
        None, flag="--classifier", help="Which probe's rows to draw (default: every classifier's, one panel row each)."
    )
    baseline: str | os.PathLike | None = option(
        None,
        flag="--baseline",
        kind="path",
        help="Results of the same label probed on a second features file (e.g. --random-init), drawn as a "
        "reference line.",
    )
    compare: str | os.PathLike | None = option(
        None,
        flag="--compare",
        kind="path",
        help="Also write one figure comparing all RESULTS (one label column each) to this path.",
    )
    dpi: int = option(150, flag="--dpi", help="Resolution of the PNG.")
    heatmap_scale: str = option(
        "full",
        flag="--heatmap-scale",
        choices=SCALES,
        help="Heatmap colours: the cells' full min-max range (perceptually uniform), a robust range of the "
        "informative cells (lower cells share one colour), or per-row min-max.",
    )

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (
        path_like("output", "baseline", "compare"),
        whole("dpi", "--dpi", hint="give --dpi a value of at least 1"),
        results_files,
        lambda config: normalise(config, "results", tuple(Path(path) for path in config.results)),
        _one_figure_per_output,
        _known_scale,
    )


@dataclass
class Drawn:
    """One figure written: what it was drawn from, the files, and the table it prints (learning curves)."""

    source: Path
    written: list[Path] = field(default_factory=list)
    table: str | None = None
    comparison: bool = False


def figure_path(results: Path, output: str | os.PathLike | None) -> Path:
    """Where the figure of ``results`` goes: beside it, into the folder ``output``, or at ``output``."""
    target = _target(results, output)
    if output is not None:
        make_folder(target.parent)
    return target


def _target(results: Path, output: str | os.PathLike | None) -> Path:
    target = default_output(results)
    if output is None:
        return target
    output = Path(output)
    return output / target.name if (output.is_dir() or not output.suffix) else output


def _check_all(config: PlotConfig) -> None:
    """Everything ``plot_files`` would refuse, before it writes a figure: each results file (a learning-curve
    file, or results with the metric, classifier and baseline asked for) and where the comparison goes."""
    from .learning import is_curve_file, read_curve
    from .plot import check_figure

    for path in config.results:
        if is_curve_file(path):
            read_curve(path)
        elif is_structural(path):
            _check_structural(path, config)
        else:
            check_figure(path, config.metric, config.classifier, config.baseline)
    targets = [_target(path, config.output) for path in config.results]
    for target in targets + ([Path(config.compare)] if config.compare is not None else []):
        check_redrawn(target, FORMATS, {}, results=config.results)  # featx's own figures only: drawn again
    if config.compare is not None:
        ours = {
            _target(path, config.output).with_suffix(f".{extension}")
            for path in config.results
            for extension in FORMATS
        }
        theirs = {Path(config.compare).with_suffix(f".{extension}") for extension in FORMATS}
        if ours & theirs:
            raise InputError(
                f"{spoken_value(config, 'compare', str(config.compare))} would overwrite the figure of one of the "
                "results files",
                f"give {spoken(config, 'compare')} a name of its own, e.g. "
                + spoken_value(config, "compare", "labels.png"),
            )


def _check_structural(path: Path, config: PlotConfig) -> None:
    """Structural results, checked (``load_structural``) with the options that apply to them: ``--metric`` one of
    their two measures; no classifier, baseline file, heatmap or comparison (their baseline is in the file)."""
    from .structural import check_measure, structural_results

    given = [
        flag
        for flag, value in (
            ("--classifier", config.classifier),
            ("--baseline", config.baseline),
            ("--compare", config.compare),
            ("--heatmap-scale", None if config.heatmap_scale == "full" else config.heatmap_scale),
        )
        if value is not None
    ]
    if given:
        raise InputError(
            f"{' and '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to the structural probe results "
            f"{path.name}",
            "a structural figure draws its measures by layer beside the baseline its file holds; leave "
            f"{' and '.join(given)} out, or give label probe results",
        )
    check_measure(structural_results(path), config.metric)


def _draw(path: Path, config: PlotConfig) -> Drawn:
    """Draw and write the figure of one results file (a learning-curve figure for a ``.curve.csv``)."""
    import matplotlib.pyplot as plt

    from .learning import format_curve_table, is_curve_file, learning_figure
    from .plot import figure

    target = figure_path(path, config.output)
    if is_curve_file(path):  # featx probe --train-sizes writes X.curve.csv
        fig, written = learning_figure(path, output=target, dpi=config.dpi)
        drawn = Drawn(path, written, format_curve_table(path))
    elif is_structural(path):  # featx probe --structural writes X.<mode>.structural.csv/.json
        from .structural import structural_figure

        fig, written = structural_figure(path, config.metric, output=target, dpi=config.dpi)
        drawn = Drawn(path, written)
    else:
        fig, written = figure(
            path,
            metric=config.metric,
            classifier=config.classifier,
            output=target,
            dpi=config.dpi,
            baseline=config.baseline,
            scale=config.heatmap_scale,
        )
        drawn = Drawn(path, written)
    plt.close(fig)
    return drawn


@keywords_of(PlotConfig)  # from Python, a message names the keyword given (dpi=0), the CLI the flag: each step
def plot_files(config: PlotConfig | str | os.PathLike | list, **options: Any) -> Iterator[Drawn]:
    """Draw and write each results file's figure, then the comparison figure; yields each as it is written.
    ``config`` is a ``PlotConfig``, or its ``results`` (a path or a list of paths) with ``options`` its fields.
    Every file and the comparison are read and checked (the comparison drawn) before the first figure is written."""
    import matplotlib.pyplot as plt

    from ..labels import labels_panels

    config = PlotConfig.build(config, **options)
    _check_all(config)
    compare = Path(config.compare) if config.compare is not None else None
    comparison = labels_panels(config.results, config.metric, config.classifier) if compare is not None else None
    try:
        for path in config.results:
            yield _draw(path, config)
        if compare is not None and comparison is not None:
            make_folder(compare.parent)
            with plt.rc_context(RC):
                yield Drawn(compare, save(comparison, compare, FORMATS, config.dpi), comparison=True)
    finally:
        if comparison is not None:
            plt.close(comparison)


__all__ = ["Drawn", "PlotConfig", "figure_path", "plot_files"]
