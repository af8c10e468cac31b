"""``featx report`` for every kind of results: regression, sentence pairs, word-level labels, ``featx erase``,
``featx neurons`` and a sweep; each page written with its sections and figures, and loaded in headless Chromium
with every figure laid out and nothing written to the console."""

import re

import pytest
from click.testing import CliRunner
from support import browser
from support.errors import assert_one_clear_error

from featx.cli import main
from featx.report.html import page as html

pytestmark = pytest.mark.slow  # tiny real runs of six kinds (~20 s once per module)

FIGURES = {
    "regression": ["R² by layer", "Spearman rho by layer", "Layer × pooling", "Predictions and residuals (layer "],
    "pairs": ["Accuracy by layer", "Layer × pooling", "Per-class F1 by layer", "Confusion matrix (layer "],
    "words": [
        "Accuracy by layer",
        "Layer × pooling",
        "Per-class F1 by layer",
        "Scalar mix weights",
        "Confusion matrix (layer ",
    ],
    "erase": ["Before and after the erasure", "Amnesic probing: the other labels"],
    "neurons": ["Neuron selection curves"],
    "sweep": ["Pareto fronts (mean)"],
}
SECTIONS = {
    "regression": ["Layer table (R²)", "training mean", "lexical baseline (TF-IDF n-grams)", "R² and MAE by layer"],
    "pairs": ["Cosine baseline (sentence pairs)", "majority class", "Confusion matrix at layer"],
    "words": ["most frequent label per word type", "control task", "corpus (2 files)", "toy-ud-test.conllu"],
    "erase": ["erasing", "amnesic probing", "eraser fitted on"],
    "neurons": ["overlap of the two rankings", "selection at layer"],
    "sweep": ["layers best across complexities", "rankings that flip", "the best probe (chosen on the training part)"],
}


@pytest.fixture(scope="module")
def pages(task_runs):
    return {kind: html.write_report(path) for kind, path in task_runs.items()}


@pytest.mark.parametrize("kind", list(FIGURES))
def test_each_kind_has_its_sections_and_figures(pages, kind):
    text = pages[kind].read_text(encoding="utf-8")
    titles = re.findall(r'<figure id="figure-\d+"><h3>([^<]+)</h3>', text)
    assert len(titles) == len(FIGURES[kind])
    for title, expected in zip(titles, FIGURES[kind], strict=True):
        assert title.startswith(expected), titles
    assert text.count("<svg") == len(titles) == text.count("How to read this.")
    for words in SECTIONS[kind]:
        assert words in text, words
    assert "http://" not in text and "https://" not in text and "<script" not in text


def test_residual_plot_and_confusion_matrix_name_how_their_layer_was_chosen(pages):
    regression = pages["regression"].read_text(encoding="utf-8")
    assert ": predictions against the truth" in regression and (
        "(chosen on the training part)" in regression or "(best on the test rows)" in regression
    )
    words = pages["words"].read_text(encoding="utf-8")
    assert "rows: true class" not in words  # the table is HTML, the CSV is featx explain's
    assert "first fold" not in words
    assert "It is fitted on the training part and scored on the test part." in words  # the scalar mix: what it read


def test_a_report_is_written_beside_each_kind(pages, task_runs):
    assert pages["erase"].name == "erased.report.html" and pages["neurons"].name == "c.report.html"
    assert pages["sweep"].name == "d.sweep.report.html" and pages["regression"].name == "reg.score.report.html"
    assert all(page.parent == task_runs[kind].parent for kind, page in pages.items())


def test_cli_report_metric(task_runs, tmp_path):
    runner = CliRunner()
    out = runner.invoke(
        main, ["report", str(task_runs["regression"]), "--metric", "spearman", "-o", str(tmp_path / "s.html")]
    )
    assert out.exit_code == 0, out.output
    assert "<h2>Layer table (Spearman rho)</h2>" in (tmp_path / "s.html").read_text()
    out = runner.invoke(
        main, ["report", str(task_runs["regression"]), "--metric", "accuracy", "-o", str(tmp_path / "a.html")]
    )
    assert_one_clear_error(out.output, r"metric 'accuracy' is not in these results; they have: .*r2, spearman")
    assert out.exit_code == 2 and not (tmp_path / "a.html").exists()
    out = runner.invoke(main, ["report", str(task_runs["erase"]), "--metric", "r2", "-o", str(tmp_path / "e.html")])
    assert out.exit_code == 2 and "metric 'r2' is not in these erase results; they have: accuracy" in out.output


@pytest.mark.skipif(browser.chromium() is None, reason="no chromium binary (apt-get install chromium)")
@pytest.mark.parametrize("kind", list(FIGURES))
def test_each_report_loads_in_chromium(pages, kind, tmp_path):
    figures = browser.render_check(pages[kind], tmp_path)
    assert len(figures) == len(FIGURES[kind])
    for figure in figures:
        assert figure["width"] > 300 and figure["height"] > 150, figure
        assert figure["elements"] > 20 and figure["drawn_width"] > 100 and figure["drawn_height"] > 50, figure
    assert browser.console_messages(pages[kind]) == []


@pytest.mark.skipif(browser.chromium() is None, reason="no chromium binary (apt-get install chromium)")
def test_the_console_detector_sees_a_blocked_fetch(tmp_path):
    page = tmp_path / "blocked.html"
    page.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{html.CSP}"></head>'
        '<body><img src="http://127.0.0.1:9/x.png" alt=""></body></html>'
    )
    messages = browser.console_messages(page)
    assert len(messages) == 1 and "violates the following Content Security Policy directive" in messages[0]


STEMS = {"erase": ("erased", "erased.erase.json"), "neurons": ("c", "c.json"), "sweep": ("d", "d.sweep.json")}


def _copy_analysis(task_runs, tmp_path, kind, change):
    """A copy of an analysis run's files (its results CSV, JSON and any other ``STEM.*`` file) with ``change``
    made to its JSON; the copied results file."""
    import json
    import shutil

    stem, payload_name = STEMS[kind]
    for source in task_runs[kind].parent.glob(f"{stem}.*"):
        shutil.copy(source, tmp_path / source.name)
    payload = json.loads((tmp_path / payload_name).read_text())
    change(payload)
    (tmp_path / payload_name).write_text(json.dumps(payload))
    return tmp_path / task_runs[kind].name


def _copy_erase(task_runs, tmp_path, change):
    return _copy_analysis(task_runs, tmp_path, "erase", change)


@pytest.mark.parametrize("kind", sorted(STEMS))
def test_an_analysis_run_with_group_says_so_as_the_probe_page_does(pages, task_runs, tmp_path, kind):
    """erase, neurons and the sweep record ``group``/``n_groups`` as probe does; their pages show the probe
    page's "grouped by" row (``sections.grouping``, one helper), and say nothing of groups without them."""
    from featx.report.html.sections import grouping, run_rows

    meta = {"group": "doc", "n_groups": 24}
    path = _copy_analysis(task_runs, tmp_path, kind, lambda payload: payload["meta"].update(meta))
    text = html.write_report(path).read_text(encoding="utf-8")
    said = grouping(meta)
    assert (
        said is not None
        and said.startswith("doc (24 groups): the folds")
        and dict(run_rows(meta))["grouped by"] == said
    )
    assert f"<td>grouped by</td><td>{said}</td>" in text
    assert "grouped by" not in pages[kind].read_text(encoding="utf-8")


def test_hostile_names_in_an_analysis_file_are_escaped(task_runs, tmp_path):
    hostile = '<img src=x onerror="alert(1)">'
    path = _copy_erase(task_runs, tmp_path, lambda payload: payload["meta"].update(label=hostile, model=hostile))
    text = html.write_report(path).read_text(encoding="utf-8")
    assert hostile not in text and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text


@pytest.mark.parametrize(
    "change, pattern",
    [
        (lambda payload: [row.pop("before") for row in payload["results"]], r"columns before are missing"),
        (lambda payload: payload["meta"].pop("settings"), r"is not a complete featx erase results file \(KeyError"),
        (
            lambda payload: [row.update(after="high") for row in payload["results"]],
            r"is not a complete featx erase results file",
        ),
    ],
)
def test_a_broken_analysis_file_is_one_clear_error(task_runs, tmp_path, change, pattern):
    path = _copy_erase(task_runs, tmp_path, change)
    out = CliRunner().invoke(main, ["report", str(path), "-o", str(tmp_path / "r.html")])
    assert out.exit_code == 2 and not (tmp_path / "r.html").exists()
    assert_one_clear_error(out.output, pattern)
