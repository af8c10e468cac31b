"""The presentation side of featx: terminal tables, figures, comparisons, layer similarity and the HTML report.

Subpackages: ``text`` (the terminal tables of every command), ``figures`` (every matplotlib figure and the
shared style) and ``html`` (``featx report``). Modules: ``load`` (reading results, choosing rows),
``compare`` + ``paired`` (``featx compare``) and ``similarity`` (``featx similarity``, linear CKA).

The names below are the notebook-facing API, imported on first use so that a command that only prints a
table never pays for matplotlib. ``compare`` and ``similarity`` are the modules of those commands (their
functions are ``compare.compare`` and ``similarity.similarity``): a name means one thing however it is reached.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "load_results": "load",
    "default_classifier": "load",
    "describe": "load",
    "best_row": "load",
    "chosen_row": "load",
    "default_metric": "load",
    "selection_note": "load",
    "layer_rows": "load",
    "references": "load",
    "plot_layer_curves": "figures.curves",
    "plot_mdl": "figures.curves",
    "plot_per_class_f1": "figures.classes",
    "plot_projection": "figures.projection",
    "plot_heatmap": "figures.heatmap",
    "plot_learning_curves": "figures.learning",
    "figure": "figures.plot",
    "labels_figure": "compare",
    "CompareConfig": "compare",
    "SimilarityConfig": "similarity",
    "PlotConfig": "figures.plot_files",
    "plot_files": "figures.plot_files",
    "ReportConfig": "html.page",
    "write_report": "html.page",
}
_MODULES = ("compare", "figures", "html", "load", "paired", "similarity", "text")

__all__ = sorted([*_HOMES, *_MODULES])


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'featx.report' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
