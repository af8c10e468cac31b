"""The heatmap's colour scales: by default the full range on a perceptually uniform map (distant values never
share a colour), robust (informative cells set it) or per row; the numbers stay absolute; blank cells say why."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

from featx.cli import main
from featx.errors import InputError
from featx.report.figures import heatmap


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def banking_like():
    """Every cell 0.89-0.92 but [CLS] at layer 0, at chance (0.013): the banking77 picture."""
    frame, meta = synthetic_results(layers=range(7), poolings=("cls", "mean", "max"), baseline=False)
    single = frame["kind"] == "single"
    rng = np.random.default_rng(0)
    frame.loc[single, "accuracy"] = np.round(rng.uniform(0.89, 0.92, single.sum()), 3)
    frame.loc[single & (frame["pooling"] == "cls") & (frame["layer"] == 0), "accuracy"] = 0.013
    return frame, meta


def _cell_colours(ax):
    image = ax.get_images()[0]
    return image.to_rgba(image.get_array())


@pytest.mark.slow
def test_robust_scale_ignores_the_at_chance_cell():
    frame, meta = banking_like()
    ax = heatmap.plot_heatmap(frame, meta, scale="robust")
    low, high = ax.get_images()[0].get_clim()
    assert low > 0.8 and high == pytest.approx(0.92, abs=0.005)
    values = frame.loc[(frame["kind"] == "single") & (frame["pooling"] == "mean"), "accuracy"].to_numpy()
    colours = _cell_colours(ax)[1]  # the mean row: its cells differ in colour now
    lowest, highest = colours[np.argmin(values)], colours[np.argmax(values)]
    assert np.abs(lowest[:3] - highest[:3]).max() > 0.3
    full = heatmap.plot_heatmap(frame, meta, scale="full", ax=plt.figure().gca())
    full_colours = _cell_colours(full)[1]
    assert (
        np.abs(full_colours[np.argmin(values)][:3] - full_colours[np.argmax(values)][:3]).max() < 0.1
    )  # the old flat look
    assert "0.01" in [text.get_text() for text in ax.texts]  # the value itself is still written


def test_robust_range_keeps_a_wide_spread_whole():
    data = np.array([[0.48, 0.53, 0.66, 0.77], [0.49, 0.52, 0.62, 0.74]])
    assert heatmap.colour_range(data) == (pytest.approx(0.48), pytest.approx(0.77))


def test_row_scale_colours_each_row_by_its_own_range():
    frame, meta = banking_like()
    ax = heatmap.plot_heatmap(frame, meta, scale="row")
    array = ax.get_images()[0].get_array()
    assert list(array.min(axis=1)) == pytest.approx([0, 0, 0]) and list(array.max(axis=1)) == pytest.approx([1, 1, 1])
    texts = sorted(text.get_text() for text in ax.texts)
    single = frame[frame["kind"] == "single"]
    assert texts == sorted(f"{value:.2f}" for value in single["accuracy"])  # absolute values in the cells
    assert "within each row" in ax.get_title(loc="left")


@pytest.mark.slow
def test_unknown_scale_is_an_input_error(tmp_path):
    frame, meta = synthetic_results()
    with pytest.raises(InputError, match="heatmap scale 'log'"):
        heatmap.plot_heatmap(frame, meta, scale="log")
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    outcome = CliRunner().invoke(main, ["plot", str(csv_path), "--heatmap-scale", "row", "-o", str(tmp_path / "f.png")])
    assert outcome.exit_code == 0, outcome.output
    assert "within each row" in (tmp_path / "f.svg").read_text()


def test_default_scale_gives_distant_values_distant_colours():
    """The demo's mood/tense picture: most cells near 0.94, a few near 0.49; the robust scale clipped the low ones
    to its lowest colour, next to 0.9x cells. The default full range keeps them apart and says so."""
    frame, meta = synthetic_results(layers=range(7), poolings=("cls", "mean", "max"), baseline=False)
    single = frame["kind"] == "single"
    rng = np.random.default_rng(1)
    frame.loc[single, "accuracy"] = np.round(rng.uniform(0.93, 0.95, single.sum()), 3)
    frame.loc[single & (frame["pooling"] == "cls") & (frame["layer"] <= 1), "accuracy"] = [0.49, 0.5]
    ax = heatmap.plot_heatmap(frame, meta)
    colours = _cell_colours(ax)
    low, high = colours[0][0][:3], colours[1][3][:3]  # cls at layer 0 (0.49) against a mean cell (~0.94)
    assert np.abs(low - high).max() > 0.5
    assert ax.get_images()[0].get_clim() == (pytest.approx(0.49), pytest.approx(frame.loc[single, "accuracy"].max()))
    assert "min–max of the cells, cividis (perceptually uniform)" in ax.get_title(loc="left")


def test_blank_cells_are_dashed_and_explained():
    frame, meta = synthetic_results(baseline=False)
    blank = (frame["kind"] == "single") & (frame["pooling"] == "cls") & (frame["layer"] == 0)
    frame.loc[blank, "accuracy"] = np.nan
    ax = heatmap.plot_heatmap(frame, meta)
    assert "–" in [text.get_text() for text in ax.texts]
    assert "no score: the vector is constant over the rows" in ax.get_xlabel()
    complete = heatmap.plot_heatmap(*synthetic_results(baseline=False), ax=plt.figure().gca())
    assert complete.get_xlabel() == "layer"
