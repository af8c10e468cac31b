"""featx.report.html.page and ``featx report``: one self-contained page (inline SVG, no URL, a CSP that forbids
fetches)."""

import re

import pytest
from click.testing import CliRunner
from support.results import synthetic_results, write_results

from featx.cli import main
from featx.report.html import page as html


@pytest.fixture(scope="module")
def page(real_runs):
    path = html.write_report(real_runs["main"])
    return path, path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_written_beside_the_results(page, real_runs):
    path, _ = page
    assert path == real_runs["folder"] / "main.sentiment.report.html"


@pytest.mark.slow
def test_self_contained_nothing_to_fetch(page):
    _, text = page
    assert (
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">' in text
    )
    assert "http://" not in text and "https://" not in text  # no URL at all, not even SVG namespaces
    assert "<script" not in text and "<link" not in text and not re.search(r"\bsrc=", text)


@pytest.mark.slow
def test_every_figure_is_inline_svg_with_how_to_read_it(page):
    _, text = page
    titles = re.findall(r'<figure id="figure-\d+"><h3>([^<]+)</h3>', text)
    assert titles == [
        "Accuracy by layer",
        "Layer × pooling",
        "Per-class F1 by layer",
        "MDL compression by layer",
        "Learning curves",
        "Confusion matrix (layer 0)",
    ]  # the layer of the mean/logreg predictions with the most right rows (no selection recorded)
    assert text.count("<svg") == len(titles) and text.count("How to read this.") == len(titles)
    assert "the same code on control labels" in text  # the MDL panel's baseline, drawn beside it
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))  # figure ids prefixed: no clash between figures


@pytest.mark.slow
def test_meta_layer_table_and_explain_sections(page):
    _, text = page
    assert "<h2>The run</h2>" in text and "<td>label</td><td>sentiment</td>" in text
    assert (
        "<h2>Layer table (accuracy)</h2>" in text and text.count('<tr class="best">') == 2
    )  # best layer of cls and of mean
    assert "Per-example diagnostics (featx explain)" in text and "Rows wrong at every layer" in text
    assert "@media print" in text


def test_results_without_predictions_or_curves_still_make_a_page(tmp_path):
    frame, meta = synthetic_results()
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    text = html.write_report(csv_path, tmp_path / "out" / "r.html").read_text()
    assert text.count("<svg") == 3  # curves, heatmap, per-class F1
    assert "No per-example diagnostics" in text


@pytest.mark.parametrize("output", ["r.probe.csv", "r.probe.json", "x.png", "page"])
def test_the_page_is_written_only_to_an_html_name_never_over_the_results_it_reads(tmp_path, output):
    """-o x.png wrote the HTML page into x.png; a results file it reads was refused as an input: an output that does
    not end in .html (or .htm) is refused before the page is made."""
    frame, meta = synthetic_results()
    csv_path, json_path = write_results(frame, meta, tmp_path / "r.probe")
    before = csv_path.read_bytes(), json_path.read_bytes()
    outcome = CliRunner().invoke(main, ["report", str(csv_path), "-o", str(tmp_path / output)])
    assert outcome.exit_code == 2
    assert f"featx report writes one HTML page, and {output} is not an .html file name" in outcome.output
    assert "hint: give a name ending in .html, e.g. --output " in outcome.output
    assert (csv_path.read_bytes(), json_path.read_bytes()) == before and not (tmp_path / "x.png").exists()
    assert html.ReportConfig(csv_path, output=tmp_path / "r.HTM").output == tmp_path / "r.HTM"  # .htm, any case


@pytest.mark.slow
def test_cli_report_defaults_to_the_last_results(real_runs, tmp_path, monkeypatch):
    monkeypatch.chdir(real_runs["folder"])  # the fixture's probes ran there
    outcome = CliRunner().invoke(main, ["report", "-o", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    assert (
        "using the last probing run in this directory:" in outcome.output
        and (tmp_path / "r.html").read_text().count("<svg") >= 2
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.probe.csv"], "does not exist"),
        (["RESULTS", "--classifier", "svm"], "no single-layer results for classifier 'svm'"),
        ([], "no results file given, and no probing run is remembered"),
    ],
)
def test_cli_report_errors_exit_2(tmp_path, monkeypatch, args, message):
    frame, meta = synthetic_results()
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    args = [str(csv_path) if arg == "RESULTS" else arg for arg in args]
    outcome = CliRunner().invoke(main, ["report", *args, "-o", str(tmp_path / "x.html")])
    assert outcome.exit_code == 2, outcome.output
    assert message in outcome.output and "Traceback" not in outcome.output
    assert not (tmp_path / "x.html").exists()


@pytest.mark.slow
def test_untrusted_strings_are_escaped_and_never_become_the_figures(tmp_path):
    # "$" started mathematics in the figures (an unbalanced one ended the report in a traceback); ESC and the
    # right-to-left override went into the page and its SVGs as they were
    hostile = "{figures}<script>alert(1)</script>$\\frac{$\x1b[2J\u202e"
    frame, meta = synthetic_results(label=hostile, names=(hostile, "pos"), model=hostile)
    meta["notes"] = [hostile]
    csv_path, _ = write_results(frame, meta, tmp_path / "r.probe")
    text = html.write_report(csv_path, tmp_path / "r.html").read_text()
    assert "<script" not in text and "&lt;script&gt;" in text
    assert text.count("<svg") == 3 and text.count("{figures}") >= 3  # the notes, title and model shown as written
    assert "\x1b" not in text and "\u202e" not in text and text.count("$\\frac{$\\x1b[2J\\u202e") >= 6
