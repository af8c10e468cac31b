"""Plot panels for the insight columns: MDL, layers like the best (hollow), learning curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from featx.errors import InputError
from featx.report.figures.curves import plot_layer_curves, plot_mdl
from featx.report.figures.learning import plot_learning_curves
from featx.report.figures.plot import figure


def table(significance=True):
    frame = pd.DataFrame(
        {
            "features": "main",
            "kind": "single",
            "layer": [0, 1, 2],
            "layer_spec": ["0", "1", "2"],
            "pooling": "mean",
            "classifier": "logreg",
            "accuracy": [0.6, 0.9, 0.88],
            "accuracy_low": [0.5, 0.85, 0.83],
            "accuracy_high": [0.7, 0.95, 0.93],
            "mdl_bits": [300.0, 120.0, 130.0],
            "mdl_compression": [1.0, 2.5, 2.3],
            "per_class_f1": "{}",
        }
    )
    if significance:
        frame["significant_vs_best"] = [True, False, False]
    return frame


def _hollow_layers(ax):
    return sorted(x for line in ax.lines if line.get_markerfacecolor() == "white" for x in line.get_xdata())


def test_layer_curves_mark_layers_not_significantly_below_the_best():
    assert _hollow_layers(plot_layer_curves(table())) == [1, 2]
    assert _hollow_layers(plot_layer_curves(table(significance=False))) == []


def test_a_layer_significantly_above_the_chosen_one_gets_a_triangle_not_a_filled_marker():
    """The paired test against the pooling's chosen layer is two-sided: a layer significantly better on the test
    rows (a choice the training part got wrong) must not read like one significantly below it."""
    frame = pd.concat([table(), table().iloc[[2]]], ignore_index=True)
    frame["layer"], frame["layer_spec"] = [0, 1, 2, 3], ["0", "1", "2", "3"]
    frame["accuracy"] = [0.6, 0.8, 0.9, 0.7]
    frame["p_vs_best"] = [0.001, np.nan, 0.002, 0.01]
    frame["significant_vs_best"] = [True, False, True, True]
    ax = plot_layer_curves(frame)
    assert _hollow_layers(ax) == [1]
    triangles = [line for line in ax.lines if line.get_marker() == "^" and len(line.get_xdata())]
    assert [list(line.get_xdata()) for line in triangles] == [[2]]
    labels = [line.get_label() for line in ax.lines]
    assert any(label.startswith("triangle: significantly above") for label in labels)
    assert _hollow_layers(plot_layer_curves(table())) == [1, 2]  # no p_vs_best column: no triangle
    assert not any(line.get_marker() == "^" for line in plot_layer_curves(table()).lines)


@pytest.mark.slow
def test_mdl_panel_and_the_figure_gets_a_third_panel(tmp_path):
    ax = plot_mdl(table())
    assert list(ax.lines[0].get_ydata()) == [1.0, 2.5, 2.3]
    assert not [line for line in ax.lines if line.get_linestyle() == ":"]  # no control task: no dotted line
    ax = plot_mdl(table().assign(control_mdl_compression=[1.0, 0.98, 0.99]))  # beside the control task's code
    dotted = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert [list(line.get_ydata()) for line in dotted] == [[1.0, 0.98, 0.99]]
    assert dotted[0].get_color() == ax.lines[0].get_color() and "control task" in dotted[0].get_label()
    with pytest.raises(InputError, match="--mdl"):
        plot_mdl(table().drop(columns=["mdl_bits", "mdl_compression"]))
    fig, written = figure(table(), output=tmp_path / "f.png", formats=("png",))
    assert len(fig.axes) >= 3 and written[0].stat().st_size > 0
    fig, _ = figure(table().drop(columns=["mdl_bits", "mdl_compression"]))
    assert not any(ax.get_title(loc="left").startswith("MDL") for ax in fig.axes)


def test_learning_curves_panel(tmp_path):
    curve = pd.DataFrame(
        {
            "layer_spec": ["1", "1", "2", "2"],
            "pooling": "mean",
            "classifier": "logreg",
            "n_train": [10, 40, 10, 40],
            "accuracy": [0.7, 0.9, 0.6, 0.8],
            "accuracy_low": [0.6, 0.85, 0.5, 0.7],
            "accuracy_high": [0.8, 0.95, 0.7, 0.9],
        }
    )
    curve.to_csv(tmp_path / "c.csv", index=False)
    ax = plot_learning_curves(tmp_path / "c.csv")
    assert [list(line.get_xdata()) for line in ax.lines] == [[10, 40], [10, 40]]
    with pytest.raises(InputError):
        plot_learning_curves(curve.iloc[:0])
