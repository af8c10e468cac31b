"""The structural probe figure (featx.report.figures.structural) and ``featx plot`` of structural results: each
measure by layer per pooling with its band, the baseline line, the chosen row starred, the best on test ringed."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from click.testing import CliRunner
from support.structural_results import structural_payload, value, write_structural

from featx.cli import main
from featx.report import plot_structural, structural_figure


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _line(ax, start: str):
    return next(line for line in ax.lines if str(line.get_label()).startswith(start))


def test_one_panel_per_measure_with_the_data_the_baseline_and_the_choices(tmp_path):
    fig, written = structural_figure(write_structural(tmp_path / "w.distance.structural.json"))
    assert written == [] and [ax.get_ylabel() for ax in fig.axes[:2]] == ["UUAS", "DSpr"]
    for ax, index in zip(fig.axes[:2], (0, 1), strict=True):
        for p, pooling in enumerate(("mean", "first")):
            line = _line(ax, pooling)
            assert list(line.get_xdata()) == [0, 1, 2, 3]
            assert np.allclose(line.get_ydata(), [value(p, layer, index) for layer in range(4)])
        baseline = _line(ax, "linear chain baseline")
        assert set(baseline.get_ydata()) == {(0.35, 0.45)[index]}
        star = _line(ax, "chosen on the training sentences: layer 1, mean")
        assert (star.get_xdata()[0], star.get_ydata()[0]) == (1, value(0, 1, index))
        ring = _line(ax, "best on the test sentences")
        assert (ring.get_xdata()[0], ring.get_ydata()[0]) == (2, value(1, 2, index))
        assert len(ax.collections) == 2  # the two poolings' bands (the baseline's band is a patch)
    assert "tiny-model · structural probe: distance (rank 64)" in fig.get_suptitle()


def test_one_measure_and_a_pooling_name_that_is_not_mathematics(tmp_path):
    path = write_structural(tmp_path / "w.json", mode="depth", poolings=("$\\frac$",))
    ax = plot_structural(path, "root_accuracy")
    ax.figure.canvas.draw()  # a "$" would start mathematics, and this one cannot be drawn
    assert ax.get_ylabel() == "root accuracy" and _line(ax, "word position baseline")
    assert _line(ax, "$\\frac$").get_ydata()[1] == value(0, 1, 0)  # shown as written


def test_featx_plot_writes_the_structural_figure(tmp_path):
    path = write_structural(tmp_path / "w.distance.structural.json")
    result = CliRunner().invoke(main, ["plot", str(path), "--metric", "dspr"])
    assert result.exit_code == 0, result.output
    svg = (tmp_path / "w.distance.structural.svg").read_text(encoding="utf-8")
    assert (tmp_path / "w.distance.structural.png").stat().st_size > 0
    assert "DSpr by layer" in svg and "UUAS by layer" not in svg  # --metric: that measure's panel only
    assert "linear chain baseline: 0.45" in svg and "chosen on the training sentences: layer 1, mean (0.410)" in svg


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "nspr"], "metric 'nspr' is not in these distance structural results; they have: uuas, dspr"),
        (["--classifier", "mlp", "--heatmap-scale", "row"], "--classifier and --heatmap-scale do not apply"),
        (["--compare", "all.png"], "--compare does not apply"),
    ],
)
def test_featx_plot_refuses_what_does_not_apply(tmp_path, args, message):
    path = write_structural(tmp_path / "w.distance.structural.json", structural_payload())
    result = CliRunner().invoke(main, ["plot", str(path), *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not list(tmp_path.glob("*.png"))
