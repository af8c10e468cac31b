"""featx.plots and ``featx plot``: what is drawn, where it is written, and the errors."""

import json

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from click.testing import CliRunner
from support.results import synthetic_results, tiny_rows, write_results
from support.tiny import write_csv

import featx
from featx.cli import main
from featx.errors import InputError, StoreError
from featx.report.figures.classes import plot_per_class_f1
from featx.report.figures.curves import plot_layer_curves
from featx.report.figures.heatmap import plot_heatmap
from featx.report.figures.plot import figure
from featx.report.figures.projection import plot_projection
from featx.report.labels import labels_figure, plot_labels
from featx.report.load import best_row, layer_rows, load_results, references
from featx.state import remember


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def tiny_features(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("plots-features")
    corpus = write_csv(folder / "corpus.csv", tiny_rows(), header=("text", "sentiment", "split"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # featx remembers the file in the working directory's .featx/
        return featx.extract(
            corpus, model=str(tiny_model), output=folder / "corpus.features.h5", poolings="cls,mean", progress=False
        ).output


@pytest.fixture
def results_csv(tmp_path):
    frame, meta = synthetic_results()
    csv_path, _ = write_results(frame, meta, tmp_path / "corpus.features.sentiment.probe")
    return csv_path


def test_csv_and_json_load_to_the_same_table(results_csv):
    from_csv, meta_csv = load_results(results_csv)
    from_json, meta_json = load_results(results_csv.with_suffix(".json"))
    assert meta_csv["label"] == meta_json["label"] == "sentiment"
    columns = ["features", "kind", "layer", "pooling", "classifier", "accuracy"]
    pd.testing.assert_frame_equal(from_csv[columns], from_json[columns], check_dtype=False)
    assert from_csv.loc[from_csv["kind"] == "single", "per_class_f1"].iloc[0] == {"neg": 0.5, "pos": 0.4}


def test_best_row_prefers_the_lower_layer_on_ties():
    frame, _ = synthetic_results(layers=range(4), peak=(None, None))
    frame.loc[frame["kind"] == "single", "accuracy"] = 0.8
    best = best_row(layer_rows(load_results(frame)[0]))
    assert int(best["layer"]) == 0


def test_references_are_majority_control_and_best_baseline():
    frame, _ = synthetic_results(layers=range(3))
    names = dict(references(load_results(frame)[0]))
    assert names["majority class"] == 0.5
    assert names["control task (max over layers)"] == pytest.approx(0.54)
    baseline = [value for name, value in names.items() if name.startswith("baseline features")]
    assert baseline == [pytest.approx(0.57)]
    assert "baseline features (best: layer 2, cls)" in names


def test_curves_one_line_per_pooling_with_bands_and_best_marked():
    frame, meta = synthetic_results(poolings=("cls", "mean", "max"), peak=(1, "max"))
    ax = plot_layer_curves(frame, meta)
    lines = {line.get_label(): line for line in ax.get_lines()}
    for pooling in ("cls", "mean", "max"):
        assert list(lines[pooling].get_xdata()) == [0, 1, 2]
    assert list(lines["mean"].get_ydata()) == pytest.approx([0.48, 0.58, 0.68])
    best = next(line for label, line in lines.items() if label.startswith("best on the test rows:"))
    assert (best.get_xdata()[0], best.get_ydata()[0]) == (1, pytest.approx(0.71))
    assert "best on the test rows: layer 1, max (0.710)" in lines
    assert len(ax.collections) == 3  # one interval band per pooling
    assert "majority class: 0.50" in lines and "control task by layer (max)" in lines  # the best pooling's control
    assert ax.get_ylabel() == "accuracy"


def test_other_classifier_and_metric():
    frame, meta = synthetic_results(classifiers=("logreg", "mlp"))
    ax = plot_layer_curves(frame, meta, metric="macro_f1", classifier="mlp")
    mean = next(line for line in ax.get_lines() if line.get_label() == "mean")
    assert list(mean.get_ydata()) == pytest.approx([0.42, 0.52, 0.62])
    assert ax.get_ylabel() == "macro-F1"


def test_classifier_rows_are_ordered_by_the_selection_score_never_the_test_score():
    """featx plot's rows of panels (one per classifier) were ordered by each classifier's best test accuracy, a
    choice made on the test rows: now the run's chosen classifier first, then by the training part's selection
    score; results without it keep table order."""
    from featx.report.figures.plot import classifiers_of

    frame, meta = synthetic_results(classifiers=("logreg", "mlp", "svm"))  # test accuracy: logreg > mlp > svm
    assert classifiers_of(frame) == ["logreg", "mlp", "svm"]  # table order, not a test-score rank that happens alike
    frame.loc[frame.kind == "single", "accuracy"] = frame.classifier.map({"logreg": 0.6, "mlp": 0.9, "svm": 0.7})
    assert classifiers_of(frame) == ["logreg", "mlp", "svm"]  # by test accuracy this was mlp, svm, logreg
    frame["selection_score"] = frame.classifier.map({"logreg": 0.7, "mlp": 0.6, "svm": 0.8})
    assert classifiers_of(frame) == ["svm", "logreg", "mlp"]
    assert classifiers_of(frame, {**meta, "selected": {"classifier": "mlp", "layer": 1}}) == ["mlp", "svm", "logreg"]


def test_heatmap_writes_every_value_in_its_cell():
    frame, meta = synthetic_results(layers=range(4), poolings=("cls", "mean", "max"))
    ax = plot_heatmap(frame, meta)
    texts = [text.get_text() for text in ax.texts]
    assert len(texts) == 12
    single = frame[(frame["kind"] == "single") & (frame["features"] == "main")]
    assert sorted(texts) == sorted(f"{value:.2f}" for value in single["accuracy"])
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["cls", "mean", "max"]
    assert len(ax.patches) == 1  # the best cell's outline


def test_per_class_f1_has_one_line_per_class():
    frame, meta = synthetic_results(names=("past", "present", "future"))
    ax = plot_per_class_f1(frame, meta, pooling="cls")
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert list(lines) == ["past", "present", "future"]
    assert lines["future"] == pytest.approx([0.3, 0.4, 0.5])


def test_projection_colours_every_labelled_row_by_class(tiny_features):
    ax = plot_projection(tiny_features, layer=2, pooling="mean", label="sentiment")
    sizes = {collection.get_label(): len(collection.get_offsets()) for collection in ax.collections}
    assert sizes == {"neg": 30, "pos": 30}
    assert ax.get_xlabel().startswith("PC1 (")
    test_only = plot_projection(
        tiny_features, layer=1, pooling="cls", label="sentiment", split="test", max_points=10, ax=plt.figure().gca()
    )
    assert sum(len(c.get_offsets()) for c in test_only.collections) == 10


def test_projection_of_a_constant_layer_says_so(tiny_features):
    ax = plot_projection(tiny_features, layer=0, pooling="cls", label="sentiment")  # [CLS] embedding
    assert "every row has the same vector here" in [text.get_text() for text in ax.texts]
    assert ax.get_xlabel() == "PC1 (0% of variance)"


@pytest.mark.slow
def test_real_probe_results_with_a_baseline_plot(tiny_features, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = featx.probe(
        tiny_features,
        label="sentiment",
        baseline=tiny_features,
        jobs=1,
        n_bootstrap=100,
        output=tmp_path / "real.probe",
    )
    assert (result.table["features"] == "baseline").any()
    outcome = CliRunner().invoke(main, ["plot"])
    assert outcome.exit_code == 0, outcome.output
    svg = (tmp_path / "real.probe.svg").read_text()
    baseline = result.table[(result.table["features"] == "baseline") & (result.table["kind"] == "single")]
    top = baseline.loc[baseline["selection_score"].idxmax()]  # chosen on the training part, as the terminal does
    assert f"baseline features (chosen: layer {int(top.layer)}, {top.pooling}): {top.accuracy:.2f}" in svg
    assert "label: sentiment" in svg


@pytest.mark.slow
def test_figure_writes_png_and_svg_with_title(results_csv, tmp_path):
    fig, written = figure(results_csv, output=tmp_path / "fig.png")
    assert written == [tmp_path / "fig.png", tmp_path / "fig.svg"]
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "fig.svg").read_text()
    assert "tiny-bert · label: sentiment · probe: logreg · 12 rows" in svg
    assert fig._suptitle.get_text().startswith("tiny-bert · label: sentiment")


def test_a_figure_draws_every_text_as_written(tmp_path):
    """A "$" in a label, class or model name is no mathematics (an unbalanced one ended plot and report in a
    traceback); a control character, a bidirectional override or half of a surrogate pair is drawn as its escape,
    so that the SVG is XML (one with ESC in it opened in no browser) and its text can be measured at all; a text
    longer than 500 characters is cut."""
    import xml.etree.ElementTree as ElementTree

    from featx.report.figures.style import svg_text, write_figure

    hostile = "$\\frac{$ <b>\x1b[31m\u202e\ud800"
    fig, ax = plt.subplots(figsize=(3, 2))  # outside featx's style: write_figure alone draws the texts as written
    ax.plot([0, 1], [0, 1], label=hostile)
    ax.set_xticks([0, 1], [hostile, "$x^$"])
    ax.legend(title=hostile)
    ax.set_xlabel("x" * 200_000)  # a model or label name this long took 36 s to draw: cut
    fig.suptitle(hostile)
    write_figure(fig, tmp_path / "f.png")
    with plt.rc_context({"svg.fonttype": "none"}):  # texts as text (featx's style), to read them back
        write_figure(fig, tmp_path / "f.svg")
        svgs = ((tmp_path / "f.svg").read_text(encoding="utf-8"), svg_text(fig))
    shown = "$\\frac{$ <b>\\x1b[31m\\u202e\\ud800"
    for svg in svgs:
        texts = [element.text for element in ElementTree.fromstring(svg[svg.index("<svg") :]).iter() if element.text]
        assert texts.count(shown) == 4 and "$x^$" in texts  # title, legend title and entry, tick label
        assert "x" * 499 + "…" in texts
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_metric_and_classifier_say_what_exists(results_csv):
    with pytest.raises(InputError, match="metric 'f2'") as error:
        plot_layer_curves(results_csv, metric="f2")
    assert "they have: accuracy," in error.value.message and "selectivity" in error.value.message
    with pytest.raises(InputError, match="classifier 'svm'") as error:
        plot_heatmap(results_csv, classifier="svm")
    assert "logreg" in error.value.hint


def test_not_a_results_file(tmp_path):
    (tmp_path / "x.csv").write_text("text,label\nhi,1\n")
    with pytest.raises(StoreError, match="not a featx probe results file"):
        load_results(tmp_path / "x.csv")
    (tmp_path / "x.json").write_text(json.dumps([1, 2]))
    with pytest.raises(StoreError, match="not a featx"):
        load_results(tmp_path / "x.json")
    with pytest.raises(StoreError, match="does not exist"):
        load_results(tmp_path / "nope.probe.csv")


def test_a_results_file_with_a_cell_that_is_not_a_number_is_one_clear_error(tmp_path):
    frame, meta = synthetic_results()
    frame["accuracy"] = frame["accuracy"].astype(object)
    frame.loc[3, "accuracy"] = "abc"  # edited by hand
    path, _ = write_results(frame, meta, tmp_path / "x.probe")
    with pytest.raises(StoreError, match=r"column 'accuracy' holds 'abc' in results row 4, not a number"):
        load_results(path)
    result = CliRunner().invoke(main, ["plot", str(path)])
    assert result.exit_code == 2 and "holds 'abc'" in result.output and "Traceback" not in result.output
    assert not list(tmp_path.glob("*.png"))


# -- the command ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_defaults_to_the_last_results(results_csv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    remember("results", results_csv)
    result = CliRunner().invoke(main, ["plot"])
    assert result.exit_code == 0, result.output
    assert f"using the last probing run in this directory: {results_csv}" in result.output
    png, svg = results_csv.with_suffix(".png"), results_csv.with_suffix(".svg")
    assert png.stat().st_size > 10_000 and svg.stat().st_size > 10_000
    assert f"wrote {png}, {svg}" in result.output


@pytest.mark.slow
def test_cli_output_directory_metric_and_baseline(results_csv, tmp_path):
    out = tmp_path / "figures"  # created on demand
    baseline_frame, meta = synthetic_results(baseline=False)
    baseline_frame["accuracy"] = 0.61
    baseline_csv, _ = write_results(baseline_frame, meta, tmp_path / "random.probe")
    result = CliRunner().invoke(
        main, ["plot", str(results_csv), "-o", str(out), "--metric", "selectivity", "--baseline", str(baseline_csv)]
    )
    assert result.exit_code == 0, result.output
    svg = (out / "corpus.features.sentiment.probe.svg").read_text()
    assert "selectivity" in svg and "baseline features (best: layer 0, cls)" not in svg  # no selectivity there
    result = CliRunner().invoke(
        main, ["plot", str(results_csv), "-o", str(tmp_path / "one.png"), "--baseline", str(baseline_csv)]
    )
    assert result.exit_code == 0, result.output
    assert "baseline features (best: layer 0, cls): 0.61" in (tmp_path / "one.svg").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "no results file given, and no probing run is remembered"),
        (["missing.probe.csv"], "does not exist"),
        (["RESULTS", "--metric", "f2"], "metric 'f2' is not in these results"),
        (["RESULTS", "RESULTS", "-o", "one.png"], "names one figure but 2 results files"),
    ],
)
def test_cli_errors_exit_2_without_traceback(results_csv, tmp_path, monkeypatch, args, message):
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    args = [str(results_csv) if arg == "RESULTS" else arg for arg in args]
    result = CliRunner().invoke(main, ["plot", *args])
    assert result.exit_code == 2, result.output
    error_line = next(line for line in result.output.splitlines() if line.startswith("featx: error:"))
    assert message in error_line and "Traceback" not in result.output
    assert not list(tmp_path.glob("**/*.png"))


def test_labels_comparison_one_line_per_label_at_its_best_pooling(tmp_path):
    sentiment = synthetic_results(label="sentiment", peak=(1, "cls"))
    tense = synthetic_results(label="tense", names=("past", "present", "future"), peak=(2, "mean"))
    ax = plot_labels([sentiment, tense])
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["sentiment (cls): best layer 1, 0.75", "tense (mean): best layer 2, 0.83"]
    fig, written = labels_figure([sentiment, tense], output=tmp_path / "labels.png")
    assert [path.name for path in written] == ["labels.png", "labels.svg"]
    assert "tiny-bert · 2 label columns · 12 rows" in (tmp_path / "labels.svg").read_text()


@pytest.mark.slow
def test_cli_compare_writes_one_more_figure(tmp_path):
    paths = []
    for label, peak in (("sentiment", (1, "cls")), ("number", (2, "mean"))):
        frame, meta = synthetic_results(label=label, peak=peak)
        paths.append(str(write_results(frame, meta, tmp_path / f"x.{label}.probe")[0]))
    result = CliRunner().invoke(main, ["plot", *paths, "--compare", str(tmp_path / "labels.png")])
    assert result.exit_code == 0, result.output
    assert {path.name for path in tmp_path.glob("*.png")} == {
        "x.sentiment.probe.png",
        "x.number.probe.png",
        "labels.png",
    }
    assert "number (mean): best layer 2, 0.83" in (tmp_path / "labels.svg").read_text()


def _with_sites(frame: pd.DataFrame, sites=("hidden", "ffn")) -> pd.DataFrame:
    """The synthetic table probed at several sites (the ffn rows 0.05 higher, and without layer 0)."""
    parts = [frame.assign(site="hidden")]
    for index, site in enumerate(sites[1:], start=1):
        other = frame[(frame["kind"] == "single") & (frame["layer"] != 0)].assign(site=site)
        parts.append(other.assign(accuracy=other["accuracy"] + 0.05 * index))
    return pd.concat(parts, ignore_index=True)


def test_sites_one_line_per_site_and_pooling():
    frame, meta = synthetic_results(poolings=("cls", "mean"))
    ax = plot_layer_curves(_with_sites(frame), meta)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert {"hidden · cls", "hidden · mean", "ffn · cls", "ffn · mean"} <= set(lines)
    assert list(lines["ffn · mean"].get_xdata()) == [1, 2] and list(lines["hidden · mean"].get_xdata()) == [0, 1, 2]
    assert lines["ffn · mean"].get_color() == lines["hidden · mean"].get_color()  # pooling keeps its colour
    assert lines["ffn · mean"].get_linestyle() != lines["hidden · mean"].get_linestyle()  # site its style
    assert "best on the test rows: layer 2, ffn · mean (0.880)" in lines
    heat = plot_heatmap(_with_sites(frame), meta)
    assert heat.get_ylabel() == "site · pooling"


@pytest.mark.slow  # over a second of CPU (worker processes / a figure of several sites)
def test_sites_with_one_pooling_one_line_per_site(tmp_path):
    frame, meta = synthetic_results(poolings=("mean",))
    frame = _with_sites(frame, ("hidden", "ffn", "attn_out"))
    ax = plot_layer_curves(frame, meta)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == ["hidden", "ffn", "attn_out"]
    assert [tick.get_text() for tick in plot_heatmap(frame, meta).get_yticklabels()] == ["hidden", "ffn", "attn_out"]
    csv_path, _ = write_results(frame, meta, tmp_path / "sites")
    result = CliRunner().invoke(main, ["plot", str(csv_path), "-o", str(tmp_path / "fig.png")])
    assert result.exit_code == 0 and (tmp_path / "fig.png").exists()
    old = frame[frame["site"] == "hidden"].drop(columns="site")  # results from before sites
    loaded, _ = load_results(old, meta)
    assert set(loaded["site"]) == {"hidden"}


@pytest.mark.parametrize(
    "level, label, key",
    [("word", "upos", "word type"), ("arc", "deprel", "dependent type"), ("arc", "head", "type pair")],
)
def test_the_lexical_reference_names_what_it_counts_by(level, label, key):
    frame, _ = synthetic_results(label=label)
    lexical = frame[frame.kind == "majority"].assign(kind="lexical", classifier="lexical", accuracy=0.6)
    frame = pd.concat([frame, lexical], ignore_index=True).assign(level=level)
    names = dict(references(load_results(frame)[0]))
    assert names[f"most frequent label per {key}"] == pytest.approx(0.6)


def test_a_baseline_of_another_label_or_task_is_refused(tmp_path):
    from featx.report.figures.plot import with_baseline

    frame, meta = synthetic_results(label="sentiment")
    same, _ = write_results(*synthetic_results(label="sentiment"), tmp_path / "same")
    other, _ = write_results(*synthetic_results(label="tense"), tmp_path / "other")
    numbers = synthetic_results(label="sentiment")[0].assign(task="regression", r2=0.3)
    regression, _ = write_results(numbers, meta, tmp_path / "regression")
    assert (with_baseline(frame, same)["features"] == "baseline").any()
    with pytest.raises(InputError, match=r"--baseline other\.csv probes 'tense' \(classification\), these results "):
        with_baseline(frame, other)
    with pytest.raises(InputError, match=r"probes 'sentiment' \(regression\), these results 'sentiment' \(class"):
        with_baseline(frame, regression)


def _regression_results(label="score"):
    """``synthetic_results`` as a regression label's results: R² where accuracy was, no class metrics."""
    frame, meta = synthetic_results(label=label, baseline=False)
    frame = frame.drop(columns=["macro_f1", "balanced_accuracy", "control_accuracy", "per_class_f1"])
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith(("macro_f1_", "balanced_accuracy_"))])
    frame = frame.rename(columns=lambda c: c.replace("accuracy", "r2")).assign(task="regression")
    return frame, {key: value for key, value in meta.items() if key != "label_names"}


@pytest.mark.slow
def test_cli_compare_of_a_classification_and_a_regression_draws_a_panel_per_task(tmp_path):
    classes, _ = write_results(*synthetic_results(label="sentiment"), tmp_path / "x.sentiment.probe")
    numbers, _ = write_results(*_regression_results(), tmp_path / "x.score.probe")
    result = CliRunner().invoke(main, ["plot", str(classes), str(numbers), "--compare", str(tmp_path / "both.png")])
    assert result.exit_code == 0, result.output
    svg = (tmp_path / "both.svg").read_text()
    assert "classification: accuracy by layer" in svg and "regression: R² by layer" in svg
    assert (tmp_path / "x.sentiment.probe.png").exists() and (tmp_path / "x.score.probe.png").exists()


def test_compare_refuses_a_regression_beside_classification_results_naming_both(tmp_path):
    classes, _ = write_results(*synthetic_results(label="sentiment"), tmp_path / "x.sentiment.probe")
    numbers, _ = write_results(*_regression_results(), tmp_path / "x.score.probe")
    with pytest.raises(InputError, match=r"x\.score\.probe\.csv holds regression results \(r2\), x\.sentiment"):
        featx.report.compare_results([classes, numbers])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--compare", "cmp.png", "--metric", "macro_f1"], "metric 'macro_f1' is not in these results"),
        (["--classifier", "svm"], "no single-layer results for classifier 'svm'"),
        (["--compare", "x.sentiment.probe.png"], "would overwrite the figure of one of the results files"),
    ],
)
def test_cli_plot_checks_every_file_before_it_writes_a_figure(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    first, _ = write_results(
        *synthetic_results(label="sentiment", classifiers=("logreg", "svm")), tmp_path / "x.sentiment.probe"
    )
    second, _ = write_results(*_regression_results(), tmp_path / "x.score.probe")
    result = CliRunner().invoke(main, ["plot", first.name, second.name, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.svg"))


def test_a_classifier_the_results_lack_is_named_with_the_ones_they_hold_and_how_to_add_it(tmp_path):
    results, _ = write_results(*synthetic_results(label="sentiment"), tmp_path / "x.sentiment.probe")
    result = CliRunner().invoke(main, ["plot", str(results), "--classifier", "mlp"])
    assert result.exit_code == 2, result.output
    assert "no single-layer results for classifier 'mlp'" in result.output
    assert "classifiers in these results: logreg" in result.output
    assert "--classifier mlp" in result.output and "--layer all" not in result.output
