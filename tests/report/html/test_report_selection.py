"""What the report side shows of a run's selection and metric: the star and highlight on the row selected on the
training part (``selection_score``), the "chosen on the training part; best on test" note, the run's own metric
as every command's default, and nothing failing when the results predate those fields."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

from featx.cli import main
from featx.report.compare import compare, load_entries
from featx.report.figures.classes import plot_per_class_f1
from featx.report.figures.curves import plot_layer_curves
from featx.report.figures.plot import figure
from featx.report.html import page as html
from featx.report.html.sections import layer_table
from featx.report.labels import labels_figure
from featx.report.load import chosen_row, default_classifier, default_metric, layer_rows, selection_note


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def selected_results(metric="accuracy"):
    """The best test row is mean/layer 2 (0.83); the training part selected mean/layer 1."""
    frame, meta = synthetic_results(baseline=False)
    single = frame["kind"] == "single"
    frame.loc[single, "selection_score"] = 0.6
    frame.loc[single & (frame["pooling"] == "mean") & (frame["layer"] == 1), "selection_score"] = 0.9
    frame["is_best_on_test"] = False
    frame.loc[single & (frame["pooling"] == "mean") & (frame["layer"] == 2), "is_best_on_test"] = True
    meta.update(
        metric=metric,
        selected={"layer": 1, "pooling": "mean", "classifier": "logreg"},
        best_on_test={"layer": 2, "pooling": "mean", "classifier": "logreg"},
        optimism=0.13,
    )
    return frame, meta


def _star(ax):
    return next(line for line in ax.lines if line.get_marker() == "*")


def test_the_star_marks_the_row_selected_on_the_training_part():
    frame, meta = selected_results()
    row, selected = chosen_row(layer_rows(frame), "accuracy", meta)
    assert selected and (row["pooling"], int(row["layer"])) == ("mean", 1)
    ax = plot_layer_curves(frame, meta)
    assert _star(ax).get_xdata()[0] == 1
    assert "selected on the training part: layer 1, mean" in _star(ax).get_label()
    assert chosen_row(layer_rows(frame), "macro_f1", meta)[1] is False  # selected by accuracy, not macro-F1


def test_a_tie_on_the_selection_score_goes_to_the_row_the_run_chose():
    """Two poolings' rows share the best selection score: the run chose cls/layer 2 (its first pooling), and the
    star (and compare, report, plot: chosen_row) is on that row, not on the lower layer of another pooling."""
    frame, meta = selected_results()
    single = frame["kind"] == "single"
    frame.loc[single & (frame["pooling"] == "cls") & (frame["layer"] == 2), "selection_score"] = 0.9
    meta["selected"] = {"features": "main", "site": "hidden", "layer": 2, "pooling": "cls", "classifier": "logreg"}
    row, selected = chosen_row(layer_rows(frame), "accuracy", meta)
    assert selected and (row["pooling"], int(row["layer"])) == ("cls", 2)
    assert _star(plot_layer_curves(frame, meta)).get_xdata()[0] == 2
    mean_rows = layer_rows(frame)[lambda rows: rows["pooling"] == "mean"]
    row, selected = chosen_row(mean_rows, "accuracy", meta)  # the chosen row is not among these: their best
    assert selected and (row["pooling"], int(row["layer"])) == ("mean", 1)


def test_without_selection_fields_the_star_is_the_best_on_test():
    frame, meta = synthetic_results(baseline=False)
    ax = plot_layer_curves(frame, meta)
    assert _star(ax).get_xdata()[0] == 2 and _star(ax).get_label().startswith("best on the test rows: layer 2, mean")
    assert selection_note(meta, "accuracy") is None


def test_table_and_page_show_the_selection_and_the_optimism(tmp_path):
    frame, meta = selected_results()
    table, best = layer_table(frame, "logreg", "accuracy", meta)
    chosen = table[best]
    assert list(zip(chosen["pooling"], chosen["layer"], strict=True)) == [("cls", 0), ("mean", 1)]
    assert "selection score (training part)" in table.columns and list(table["best on test"]).count("yes") == 1
    note = "layer 1 (mean, logreg) chosen on the training part; best on test: layer 2 (mean, logreg) (+0.130)"
    assert selection_note(meta, "accuracy") == note
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    text = html.write_report(csv_path, tmp_path / "r.html").read_text()
    assert note in text and "Highlighted: the row of each pooling selected on the training part" in text


@pytest.mark.slow
def test_the_runs_metric_is_the_default_everywhere(tmp_path):
    frame, meta = synthetic_results(baseline=False)
    meta["metric"] = "macro_f1"
    assert default_metric(frame, meta) == "macro_f1"
    assert default_metric(frame, {}) == "accuracy"
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    fig, _ = figure(csv_path)
    assert fig.axes[0].get_title(loc="left") == "macro-F1 by layer"
    assert "<h2>Layer table (macro-F1)</h2>" in html.write_report(csv_path, tmp_path / "r.html").read_text()
    assert compare([csv_path]).metric == "macro_f1"
    out = CliRunner().invoke(
        main, ["plot", str(csv_path), "--metric", "balanced_accuracy", "-o", str(tmp_path / "p.png")]
    )
    assert out.exit_code == 0, out.output
    assert "balanced accuracy by layer" in (tmp_path / "p.svg").read_text()


def test_compare_draws_bands_stars_the_selection_and_notes_the_optimism(tmp_path):
    a, b = (write_results(*selected_results(), tmp_path / f"{name}.probe")[0] for name in ("a", "b"))
    result = compare([a, b], names="a,b", tests=False)
    ax = result.figure.axes[0]
    assert len(ax.collections) >= 2  # one 95% band per line
    assert all(entry.selected and int(entry.best["layer"]) == 1 for entry in result.entries)
    assert "a: layer 1 (mean, logreg) chosen on the training part; best on test: layer 2" in result.format()


def test_a_run_of_several_classifiers_is_drawn_and_compared_at_the_classifier_it_chose(tmp_path):
    """logreg/mean is best on the test rows, mlp/mean was chosen on the training part: featx compare, the page and the
    per-class figure drew logreg (the classifier of the best test row), and the per-class figure the pooling of mlp's
    best test row (cls), choices made on the test rows."""
    frame, meta = synthetic_results(baseline=False, classifiers=("logreg", "mlp"))
    single = frame["kind"] == "single"
    frame.loc[single, "selection_score"] = 0.6
    frame.loc[single & (frame["classifier"] == "mlp") & (frame["pooling"] == "mean") & (frame["layer"] == 1),
              "selection_score"] = 0.9  # fmt: skip
    meta.update(selected={"layer": 1, "pooling": "mean", "classifier": "mlp"})
    best_on_test = frame.loc[frame[single].accuracy.idxmax()]
    assert (best_on_test["classifier"], best_on_test["pooling"]) == ("logreg", "mean")
    entry = load_entries([write_results(frame, meta, tmp_path / "several.probe")[0]])[0]  # featx compare's line
    assert (entry.best["classifier"], entry.best["pooling"], int(entry.best["layer"])) == ("mlp", "mean", 1)
    assert default_classifier(frame) == "mlp"  # results without the run's meta: by the selection score
    assert default_classifier(frame, meta) == "mlp"
    mlp = frame[single & (frame["classifier"] == "mlp")]
    assert mlp.loc[mlp.accuracy.idxmax(), "pooling"] == "cls"
    assert plot_per_class_f1(frame, meta).get_title(loc="left") == "per-class F1 by layer (mean pooling)"


def test_all_labels_figure_colour_matches_majority_lines_and_takes_limits_from_the_data(tmp_path):
    paths = []
    for index, label in enumerate(("sentiment", "tense")):
        frame, meta = synthetic_results(label=label, baseline=False)
        frame.loc[frame["kind"] == "majority", "accuracy"] = 0.55 + 0.1 * index
        paths.append(write_results(frame, meta, tmp_path / f"{label}.probe")[0])
    fig, _ = labels_figure(paths)
    ax = fig.axes[0]
    curves = [line for line in ax.lines if line.get_label().startswith(("sentiment", "tense"))]
    dashed = [c for c in ax.collections if c.get_linestyle()[0][1] is not None]  # the majority hlines
    assert len(dashed) == 2
    for line, majority in zip(curves, dashed, strict=True):
        assert np.allclose(plt.matplotlib.colors.to_rgb(line.get_color()), majority.get_color()[0][:3])
    low, high = ax.get_ylim()
    assert 0.4 < low < 0.5 and high <= 1.01  # from the bands (0.45 at the lowest), not a fixed 0.3


def test_per_class_legend_sits_beside_the_panel():
    frame, meta = synthetic_results(baseline=False)
    ax = plot_per_class_f1(frame, meta)
    ax.figure.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1


def test_far_references_stay_off_the_axis_and_say_so():
    """The UPOS picture: curves at 0.85-0.94, the majority class at 0.15."""
    frame, meta = synthetic_results(layers=range(13), baseline=False)
    single = frame["kind"] == "single"
    rng = np.random.default_rng(0)
    frame.loc[single, "accuracy"] = np.round(rng.uniform(0.85, 0.94, single.sum()), 3)
    frame.loc[single, ["accuracy_low", "accuracy_high"]] = np.c_[
        frame.loc[single, "accuracy"] - 0.01, frame.loc[single, "accuracy"] + 0.01
    ]
    frame.loc[frame["kind"] == "majority", "accuracy"] = 0.15
    fig, _ = figure(frame, meta)
    ax = fig.axes[0]
    assert ax.get_ylim()[0] > 0.7
    assert any(line.get_label() == "majority class: 0.15 (below the axis)" for line in ax.lines)
    assert fig.get_size_inches()[0] <= 15


def test_the_note_names_a_combined_row_by_its_spec_and_the_select_helpers_fields():
    """The records ``featx probe`` writes: ``layer`` None for cat/stack rows, a site, scores beside."""
    selected = {"features": "main", "site": "hidden", "layer_spec": "cat(1,2)", "layer": None, "pooling": "mean"}
    best = {"site": "ffn", "layer_spec": "2", "layer": 2, "pooling": "cls", "classifier": "svm", "test_score": 0.9}
    meta = {"metric": "accuracy", "selected": selected, "best_on_test": best, "optimism": 0.021}
    assert selection_note(meta, "accuracy") == (
        "layer cat(1,2) (mean) chosen on the training part; best on test: layer 2 (ffn, cls, svm) (+0.021)"
    )
    assert selection_note(meta, "macro_f1") is None  # the selection was by accuracy


def test_a_figure_in_another_metric_than_the_choice_says_its_star_is_the_best_on_test():
    from featx.report.html.probe_figures import curves_how

    meta = {"metric": "r2", "selected": {"layer": 1, "pooling": "mean"}}
    assert "selected on the training part" in curves_how("r2", meta)
    other = curves_how("spearman", meta)
    assert "on these test rows in Spearman rho (the run chose in R²)" in other
    assert "selected on the training part" not in other


def test_the_report_table_shows_the_mdl_columns_when_the_run_has_them():
    """``featx probe --mdl`` writes the labels' codelength (and the control task's): the HTML layer table showed none
    of it. Its columns are there as the terminal table writes them, escaped as every cell; absent without --mdl."""
    from featx.report.html.parts import table_html

    frame, meta = synthetic_results(baseline=False)
    assert not any("MDL" in name for name in layer_table(frame, "logreg", "accuracy", meta)[0].columns)
    single = frame["kind"] == "single"
    frame.loc[single, "mdl_bits"], frame.loc[single, "mdl_compression"] = 1234.4, 3.456
    columns = list(layer_table(frame, "logreg", "accuracy", meta)[0].columns)
    assert columns[-3:-1] == ["MDL bits", "MDL compression"]  # the control task's code: none without it
    frame.loc[single, "control_mdl_bits"], frame.loc[single, "control_mdl_compression"] = 4000.0, 1.01
    frame.loc[single, "mdl_selectivity"] = 2765.6
    table, best = layer_table(frame, "logreg", "accuracy", meta)
    mdl = ["MDL bits", "MDL compression", "control MDL bits", "control MDL compression", "MDL selectivity (bits)"]
    assert table.loc[0, mdl].tolist() == ["1,234", "3.46", "4,000", "1.01", "+2,766"]
    text = table_html(table, best)
    assert "<th>MDL selectivity (bits)</th>" in text and '<td class="num">+2,766</td>' in text


def test_the_report_table_shows_the_control_in_the_runs_metric():
    from featx.report.html.sections import layer_table

    frame, meta = synthetic_results(baseline=False)
    frame = frame.assign(control_accuracy=0.999, control_macro_f1=0.123)
    table, _ = layer_table(frame, "logreg", "macro_f1", {**meta, "metric": "macro_f1"})
    names = [name for name in table.columns if name.startswith("control")]
    assert len(names) == 1 and names[0] != "control" and "F1" in names[0]
    assert set(table[names[0]]) == {"0.123"}
    plain, _ = layer_table(frame, "logreg", "accuracy", {**meta, "metric": "accuracy"})
    assert set(plain["control"]) == {"0.999"}


def test_the_report_table_writes_p_values_as_the_terminal_does():
    from featx.report.html.sections import layer_table
    from featx.report.text.format import p_value

    frame, meta = synthetic_results(baseline=False)
    nan = float("nan")  # rows: majority, cls 0-2, mean 0-2, cat(1,2)
    frame = frame.assign(
        p_vs_best_holm=[nan, 0.000999, 0.0123, 0.5, nan, 0.000999, 0.2, nan],
        significant_vs_best=[False, True, True, False, False, False, False, False],
    )
    table, _ = layer_table(frame, "logreg", "accuracy", meta)
    assert list(table["p vs best"]) == ["<.001!", "0.012!", "0.500", "-", "<.001", "0.200"]
    singles = frame[frame["kind"] == "single"]
    assert list(table["p vs best"]) == [
        p_value(row.p_vs_best_holm, row.significant_vs_best) for row in singles.itertuples()
    ]
