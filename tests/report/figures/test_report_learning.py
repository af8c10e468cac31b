"""Learning curves: ``featx plot X.curve.csv`` draws them, the probe prints a short table of them."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from click.testing import CliRunner

from featx.cli import main
from featx.errors import InputError
from featx.report.figures import learning


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def curve_table():
    return pd.DataFrame(
        {
            "features": "main",
            "site": "hidden",
            "label": "tense",
            "layer_spec": ["1", "1", "2", "2"],
            "layer": [1, 1, 2, 2],
            "pooling": "mean",
            "classifier": "logreg",
            "train_size": [0.5, 1.0, 0.5, 1.0],
            "n_train": [20, 40, 20, 40],
            "accuracy": [0.7, 0.9, 0.6, 0.8],
            "accuracy_low": [0.6, 0.85, 0.5, 0.7],
            "accuracy_high": [0.8, 0.95, 0.7, 0.9],
            "macro_f1": 0.5,
            "evaluation": "split",
        }
    )


def test_curve_table_lists_accuracy_by_size_per_layer():
    text = learning.format_curve_table(curve_table())
    lines = text.splitlines()
    assert lines[0] == "learning curve (hidden · mean · logreg): accuracy by training size (fraction)"
    assert lines[1].split() == ["layer", "0.5", "1"]
    assert lines[2].split() == ["1", "0.700", "0.900"] and lines[3].split() == ["2", "0.600", "0.800"]


@pytest.mark.slow
def test_cli_plot_of_a_curve_file_draws_learning_curves(tmp_path):
    path = tmp_path / "x.tense.curve.csv"
    curve_table().to_csv(path, index=False)
    outcome = CliRunner().invoke(main, ["plot", str(path)])
    assert outcome.exit_code == 0, outcome.output
    svg = tmp_path / "x.tense.curve.svg"
    assert svg.exists() and "learning curves" in svg.read_text() and "layer 2" in svg.read_text()
    assert "learning curve (hidden · mean · logreg)" in outcome.output
    assert "lacks column" not in outcome.output
    assert learning.is_curve_file(path) and not learning.is_curve_file(tmp_path / "x.probe.csv")


def test_a_curve_file_without_curve_columns_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.curve.csv"
    path.write_text("a,b\n1,2\n")
    outcome = CliRunner().invoke(main, ["plot", str(path)])
    assert outcome.exit_code == 2 and "no learning-curve rows (missing column(s)" in outcome.output
    assert "Traceback" not in outcome.output
    with pytest.raises(InputError):
        learning.read_curve(curve_table().iloc[:0])


@pytest.mark.slow
def test_probe_prints_the_curve_table(real_runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = CliRunner().invoke(
        main,
        [
            "probe",
            str(real_runs["features"]),
            "--label",
            "sentiment",
            "--pooling",
            "mean",
            "--train-sizes",
            "0.5,1.0",
            "--curve-layers",
            "1,2",
            "--jobs",
            "1",
            "-o",
            str(tmp_path / "p"),
        ],
    )
    assert outcome.exit_code == 0, outcome.output
    assert "learning curve (hidden · mean · logreg): accuracy by training size (fraction)" in outcome.output
    table = outcome.output.split("accuracy by training size (fraction)")[1].splitlines()
    assert table[1].split() == ["layer", "0.5", "1"] and [row.split()[0] for row in table[2:4]] == ["1", "2"]


def test_the_table_says_how_mixed_sizes_read():
    """``--train-sizes 0.5,200,1.0``: fractions and a row count in one table; the header says which is which."""
    import pandas as pd

    from featx.report import format_curve_table

    rows = [
        {"site": "hidden", "pooling": "mean", "classifier": "logreg", "layer_spec": "1", "train_size": size,
         "n_train": n, "accuracy": accuracy}
        for size, n, accuracy in ((0.5, 100, 0.7), (200.0, 200, 0.8), (1.0, 400, 0.9))
    ]  # fmt: skip
    lines = format_curve_table(pd.DataFrame(rows)).splitlines()
    assert lines[0].endswith("by training size (a fraction up to 1, a number of rows above 1)")
    assert lines[1].split() == ["layer", "0.5", "1", "200"]


@pytest.mark.parametrize("metric, name", [("accuracy", "majority class"), ("r2", "training mean")])
def test_the_curves_draw_each_sizes_baseline(metric, name):
    curve = curve_table().assign(baseline=[0.5, 0.55, 0.5, 0.55])
    if metric == "r2":
        curve = curve.rename(columns=lambda column: column.replace("accuracy", "r2"))
    ax = learning.plot_learning_curves(curve)
    lines = {line.get_label(): line for line in ax.get_lines()}
    baseline = next(line for label, line in lines.items() if label.startswith(name))
    assert list(baseline.get_xdata()) == [20, 40] and list(baseline.get_ydata()) == [0.5, 0.55]
    assert not any(
        label.startswith(name)
        for label in (line.get_label() for line in learning.plot_learning_curves(curve_table()).get_lines())
    )
