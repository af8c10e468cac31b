"""The presentation side of featx: terminal tables, figures, comparisons, layer similarity and the HTML report.

Subpackages: ``text`` (the terminal tables of every command), ``figures`` (every matplotlib figure and the
shared style), ``html`` (``featx report``) and ``study`` (``featx study report``: one interactive page over a
whole study). Modules: ``load`` (reading results, choosing rows), ``structural`` (reading structural probe results),
``compare`` + ``paired`` (``featx compare``) and ``similarity`` (``featx similarity``, linear CKA).

The names below are the package's face (the CLI, featx's other packages and notebooks import only these),
imported on first use so that a command that only prints a table never pays for matplotlib. The printouts of
every probing result are here (``format_probe``, ``format_erase``, ``format_neurons``, ``format_sweep``), with
the figures written beside an analysis' data files (``save_neurons_figure``, ``save_sweep_figures``): the
probing side holds and writes the data and never imports this package.

``compare`` and ``similarity`` are the modules of those commands, kept for notebooks; their functions are
``compare_results`` and ``layer_similarity`` here: a name means one thing however it is reached.
"""

from __future__ import annotations

from ..lazy import lazy_exports

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
    "load_structural": "structural",
    "StructuralResults": "structural",
    "format_probe": "text.run",
    "format_erase": "text.erase",
    "format_neurons": "text.neurons",
    "save_neurons_figure": "text.neurons",
    "format_sweep": "text.sweep",
    "format_structural": "text.structural",
    "save_sweep_figures": "text.sweep",
    "format_curve_table": "figures.learning",
    "plot_layer_curves": "figures.curves",
    "plot_lens": "figures.lens",
    "save_lens_figure": "figures.lens",
    "plot_mdl": "figures.curves",
    "plot_per_class_f1": "figures.classes",
    "plot_projection": "figures.projection",
    "plot_heatmap": "figures.heatmap",
    "plot_structural": "figures.structural",
    "structural_figure": "figures.structural",
    "save_intervention_figure": "figures.intervene",
    "plot_learning_curves": "figures.learning",
    "figure": "figures.plot",
    "labels_figure": "labels",
    "CompareConfig": "compare",
    "compare_results": "compare:compare",
    "model_top_layer": "compare",  # what a relative depth divides by: featx compare and a study's table share it
    "SimilarityConfig": "similarity",
    "layer_similarity": "similarity:similarity",
    "PlotConfig": "figures.plot_files",
    "plot_files": "figures.plot_files:plot_files",
    "ReportConfig": "html.page",
    "write_report": "html.page",
    "write_study_report": "study.page",
    "render_study_report": "study.page",
    "run_study_first": "study.table",  # the hint of a study with no results: featx.study.load shares it
    "expected_layer": "study.table",  # Tenney et al.'s E[l]: the study summary and the study page share one definition
    "paired_test_at": "paired",
    "why_not_paired": "paired",
    # the modules of the notebook-facing API, each the attribute of the same name
    **{
        module: module
        for module in (
            "compare",
            "figures",
            "html",
            "labels",
            "load",
            "paired",
            "similarity",
            "structural",
            "study",
            "text",
        )
    },
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
