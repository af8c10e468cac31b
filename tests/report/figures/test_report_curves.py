"""Layer curves and the ``featx plot`` figure: the gaps analysts hit (legend, coinciding lines, baseline curve,
several classifiers, many classes)."""

import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

from featx.cli import main
from featx.report.figures import classes, curves
from featx.report.figures import plot as figures


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _labels(ax):
    return {line.get_label(): line for line in ax.get_lines()}


@pytest.mark.slow
def test_legend_stays_inside_the_figure_with_a_baseline_and_long_names(tmp_path):
    frame, meta = synthetic_results(poolings=("cls", "mean", "max", "last", "pooler"))
    meta["model"] = "sentence-transformers/paraphrase-multilingual-mpnet-base-v2"
    frame["control_accuracy"] = 0.5  # on the majority line: one more, longer legend entry
    fig, _ = figures.figure(frame, meta, output=tmp_path / "f.png", formats=("png",))
    renderer = fig.canvas.get_renderer()
    assert fig.axes[0].yaxis.label.get_window_extent(renderer).x0 > 5  # the tall legend pushed it off before
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        # (the star handle's marker may overhang the last text row by a few pixels)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 >= -4, (box, fig.bbox)


def test_control_line_on_the_majority_line_stays_visible_and_says_so():
    frame, meta = synthetic_results()
    frame["control_accuracy"] = 0.5  # exactly the majority class, as on some corpora
    ax = curves.plot_layer_curves(frame, meta)
    lines = _labels(ax)
    control = lines["control task (max over layers): 0.50 (= majority class)"]
    assert control.get_marker() == "x" and list(control.get_xdata()) == [0, 1, 2]
    assert control.get_linestyle() != lines["majority class: 0.50"].get_linestyle()
    apart = curves.plot_layer_curves(synthetic_results()[0], meta, ax=plt.figure().gca())
    # a control that varies by layer is drawn as its own curve at the best pooling, not as its maximum
    curve = _labels(apart)["control task by layer (mean)"]
    assert list(curve.get_xdata()) == [0, 1, 2] and list(curve.get_ydata()) == pytest.approx([0.52, 0.53, 0.54])
    assert not any(label.startswith("control task (max") for label in _labels(apart))


def test_baseline_features_get_their_own_curve_by_layer():
    frame, meta = synthetic_results(poolings=("cls", "mean"), peak=(2, "cls"))
    ax = curves.plot_layer_curves(frame, meta)
    curve = _labels(ax)["baseline features by layer (cls)"]
    assert list(curve.get_xdata()) == [0, 1, 2] and list(curve.get_ydata()) == pytest.approx([0.55, 0.56, 0.57])
    without = curves.plot_layer_curves(synthetic_results(baseline=False)[0], meta, ax=plt.figure().gca())
    assert not [label for label in _labels(without) if label.startswith("baseline")]


@pytest.mark.slow
def test_every_classifier_gets_its_own_row_of_panels(tmp_path):
    frame, meta = synthetic_results(classifiers=("logreg", "svm", "mlp"))
    fig, _ = figures.figure(frame, meta, output=tmp_path / "f.png")
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    for name in ("logreg", "svm", "mlp"):
        assert f"accuracy by layer — {name} probe" in titles
    assert "probes: logreg, svm, mlp (one row each)" in fig._suptitle.get_text()
    svg = (tmp_path / "f.svg").read_text()
    assert "svm probe" in svg and "mlp probe" in svg
    one, _ = figures.figure(frame, meta, classifier="svm")
    assert "probe: svm" in one._suptitle.get_text() and len(one.axes) == 3  # curves, heatmap, colour bar


def test_per_class_f1_with_many_classes_highlights_the_weakest():
    names = [f"intent_{i:02d}" for i in range(77)]
    frame, meta = synthetic_results(names=tuple(names))
    single = frame["kind"] == "single"
    frame.loc[single, "per_class_f1"] = [
        json.dumps({name: 0.3 + 0.009 * i for i, name in enumerate(names)}) for _ in range(single.sum())
    ]
    ax = classes.plot_per_class_f1(frame, meta, pooling="cls")
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == names[:10]  # the ten lowest-F1 classes, named
    assert len(ax.get_lines()) == 77  # the others drawn thin and grey
    assert "10 lowest-F1 classes of 77" in ax.get_legend().get_title().get_text()


@pytest.mark.slow
def test_cli_plot_draws_every_classifier(tmp_path):
    frame, meta = synthetic_results(classifiers=("logreg", "svm"))
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    outcome = CliRunner().invoke(main, ["plot", str(csv_path)])
    assert outcome.exit_code == 0, outcome.output
    assert "accuracy by layer — svm probe" in (tmp_path / "r.probe.svg").read_text()


def test_reference_curves_are_drawn_at_the_pooling_chosen_on_the_training_part():
    """The control and baseline curves were drawn at the pooling of the best test row (mean, layer 2 here) while
    the star marked the row chosen on the training part (cls, layer 1): they follow the chosen row."""
    frame, meta = synthetic_results(poolings=("cls", "mean"), peak=(2, "mean"))
    frame["selection_score"] = np.where((frame["pooling"] == "cls") & (frame["layer"] == 1), 0.9, 0.6)
    frame.loc[frame["kind"] == "majority", "selection_score"] = np.nan
    frame.loc[frame["pooling"] == "cls", "control_accuracy"] += 0.1  # the two poolings' controls tell apart
    ax = curves.plot_layer_curves(frame, meta)
    lines = _labels(ax)
    assert "control task by layer (cls)" in lines and "baseline features by layer (cls)" in lines
    assert list(lines["control task by layer (cls)"].get_ydata()) == pytest.approx([0.62, 0.63, 0.64])
    # Baseline features without the chosen pooling: their curve is drawn at their own row chosen on the training
    # part (max), where it was at their best test row (mean).
    base = frame[frame["features"] == "baseline"]
    frame = pd.concat(
        [
            frame[frame["features"] != "baseline"],
            base.assign(pooling="mean", accuracy=base["accuracy"] + 0.2, selection_score=0.5),
            base.assign(pooling="max", selection_score=0.7),
        ]
    )
    ax = plt.figure().gca()
    curves._draw_baseline_curve(ax, frame, frame[frame["pooling"] == "cls"].iloc[0], "accuracy", "logreg")
    assert list(_labels(ax)) == ["baseline features by layer (max)"]
