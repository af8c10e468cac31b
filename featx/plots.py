"""Layer-wise plots of probe results: the old import path, kept so existing code keeps working.

The functions live in the ``featx.report`` package now (``load``, ``curves``, ``heatmap``,
``learning``, ``figures``, ``compare``); this module re-exports them under their old names.
"""

from __future__ import annotations

from .report.compare import compare, labels_figure, plot_compare, plot_labels  # noqa: F401
from .report.curves import (_draw_references, _mark_like_best, plot_layer_curves, plot_mdl,  # noqa: F401
                            plot_per_class_f1, plot_projection)
from .report.figures import classifiers_of, figure, has_mdl  # noqa: F401
from .report.heatmap import SCALES, colour_range, plot_heatmap  # noqa: F401
from .report.learning import format_curve_table, learning_figure, plot_learning_curves, read_curve  # noqa: F401
from .report.load import (METRIC_NAMES, METRICS, REQUIRED_COLUMNS, _as_dict, _check_metric,  # noqa: F401
                          _layer_results, _linestyle, _model_name, _read_results_file, _series_name, best_row,
                          default_classifier, describe, layer_rows, load_results, poolings_of, references)
from .report.similarity import plot_similarity, similarity, similarity_figure  # noqa: F401
from .report.style import (CYCLE, FORMATS, MARKERS, OKABE_ITO, POOLING_STYLE, RC, REFERENCE_GREY,  # noqa: F401
                           SITE_LINESTYLES, _axes, _style, default_output, legend_below, save, svg_text)
