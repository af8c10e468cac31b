"""Insight panels: MDL by layer, hollow markers for layers not significantly worse than the best, curves."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from featx.errors import InputError  # noqa: E402
from featx.insight_plots import insight_figure, plot_learning_curves, plot_mdl, plot_significance  # noqa: E402


def table():
    return pd.DataFrame({
        "features": "main", "kind": "single", "layer": [0, 1, 2], "pooling": "mean", "classifier": "logreg",
        "accuracy": [0.6, 0.9, 0.88], "mdl_bits": [300.0, 120.0, 130.0], "mdl_compression": [1.0, 2.5, 2.3],
        "significant_vs_best": [True, False, False],
    })


def test_significance_panel_draws_hollow_markers_for_layers_like_the_best():
    ax = plot_significance(table())
    filled, hollow = ax.collections[0], ax.collections[1]
    assert len(filled.get_offsets()) == 1 and filled.get_offsets()[0][0] == 0
    assert sorted(x for x, _ in hollow.get_offsets()) == [1, 2]


def test_mdl_panel_and_figure(tmp_path):
    ax = plot_mdl(table())
    assert list(ax.lines[0].get_ydata()) == [1.0, 2.5, 2.3]
    with pytest.raises(InputError, match="--mdl"):
        plot_mdl(table().drop(columns=["mdl_bits", "mdl_compression"]))
    curve = pd.DataFrame({"layer_spec": ["1", "1"], "pooling": "mean", "classifier": "logreg", "n_train": [10, 40],
                          "accuracy": [0.7, 0.9], "accuracy_low": [0.6, 0.85], "accuracy_high": [0.8, 0.95]})
    assert list(plot_learning_curves(curve).lines[0].get_xdata()) == [10, 40]
    fig = insight_figure(table(), curve=curve, output=tmp_path / "f.png")
    assert len(fig.axes) == 3 and (tmp_path / "f.png").stat().st_size > 0
