"""The figure ``featx plot --compare`` writes: several results files (e.g. one per label column) in one panel,
as ``featx compare`` draws them, or one panel per task when classification and regression results are mixed
(accuracy and R² are never drawn on one axis)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..options import spoken, spoken_value
from .compare import compare, compare_title, load_entries, name_entries, paired_tests, task_of
from .figures.compare import plot_compare
from .figures.style import FORMATS, RC, save
from .files import make_folder
from .load import METRIC_NAMES, load_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_labels(
    results: Iterable, ax=None, metric: str | None = None, classifier: str | None = None, title: bool | str = True
):
    """Several results files (e.g. one per label column) in one panel: ``plot_compare`` without tests."""
    entries = load_entries(list(results), metric, classifier)
    return plot_compare(entries, ax=ax, metric=entries[0].metric, title=title)


def _by_task(results: list) -> dict[str, list]:
    """The results files grouped by task (``task_of``), in the order the tasks first appear."""
    groups: dict[str, list] = {}
    for source in results:
        groups.setdefault(task_of(load_results(source)[0]), []).append(source)
    return groups


def labels_panels(results: Iterable, metric: str | None = None, classifier: str | None = None) -> Figure:
    """``compare``'s figure, or with results of both tasks (classification and regression label columns) one
    panel per task, each in its own metric and tested within itself; everything is read and checked first."""
    import matplotlib.pyplot as plt

    results = list(results)
    groups = _by_task(results)
    if len(groups) == 1:
        return compare(results, metric=metric, classifier=classifier).figure
    if metric is not None:
        raise InputError(
            f"{spoken_value(None, 'metric', metric, '--metric')} is one task's metric, and these results mix "
            f"{' and '.join(groups)}",
            f"leave {spoken(None, 'metric', '--metric')} out: each task's panel is drawn in its own metric "
            "(accuracy, R²)",
        )
    panels = [load_entries(sources, None, classifier) for sources in groups.values()]
    name_entries([entry for entries in panels for entry in entries], None)  # named by what differs across all files
    tests = [paired_tests(entries)[0] if len(entries) > 1 else None for entries in panels]
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(panels), figsize=(8 * len(panels), 6), layout="constrained", squeeze=False)
        for ax, task, entries, tested in zip(axes[0], groups, panels, tests, strict=True):
            name = METRIC_NAMES.get(entries[0].metric, entries[0].metric)
            plot_compare(entries, ax=ax, metric=entries[0].metric, tests=tested, title=f"{task}: {name} by layer")
        everything = [entry for entries in panels for entry in entries]
        fig.suptitle(compare_title(everything), fontsize=13, x=0.01, ha="left")
    return fig


def labels_figure(
    results: Iterable,
    metric: str | None = None,
    classifier: str | None = None,
    output: str | os.PathLike | None = None,
    formats: Iterable[str] = FORMATS,
    dpi: int = 150,
):
    """``labels_panels`` as ``(figure, written)``: what ``featx plot --compare`` writes (no tables)."""
    import matplotlib.pyplot as plt

    fig = labels_panels(results, metric, classifier)
    written = []
    if output is not None:
        make_folder(Path(output).parent)
        with plt.rc_context(RC):
            written = save(fig, output, formats, dpi)
    return fig, written


__all__ = ["labels_figure", "labels_panels", "plot_labels"]
