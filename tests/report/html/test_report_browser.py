"""The HTML report in a real headless browser (Chromium): every figure laid out and drawn, no network request,
a screenshot that is not blank, and a PDF print. Skipped only when no Chromium binary exists
(``make test`` and ``.ci/run`` install Debian's ``chromium`` when it is missing)."""

import os
from pathlib import Path

import pytest
from support import browser

from featx.report.html import page as html

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        browser.chromium() is None, reason="no chromium binary (apt-get install chromium, or set FEATX_CHROMIUM)"
    ),
]


@pytest.fixture(scope="module")
def report(real_runs):
    return html.write_report(real_runs["main"])


@pytest.fixture
def keep(tmp_path):
    """Where screenshots go: FEATX_REPORT_CHECK_DIR (``make report-check`` keeps them), else a temp dir."""
    folder = Path(os.environ.get("FEATX_REPORT_CHECK_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_every_figure_is_laid_out_and_drawn(report, tmp_path):
    figures = browser.render_check(report, tmp_path)
    assert len(figures) == report.read_text().count("<figure ") == 6
    for figure in figures:
        assert figure["width"] > 300 and figure["height"] > 150, figure
        assert figure["elements"] > 20 and figure["drawn_width"] > 100 and figure["drawn_height"] > 50, figure
    assert browser.dom(report).count("<svg") == 6  # parsed as SVG by the browser itself, with the CSP in force


def test_the_report_makes_no_network_request(report, tmp_path):
    assert browser.page_requests(report, tmp_path) == []


def test_the_request_detector_and_the_csp_work(tmp_path):
    image = '<img src="http://127.0.0.1:9/figure.png" alt="">'
    open_page = tmp_path / "open.html"
    open_page.write_text(f"<!DOCTYPE html><html><head></head><body>{image}</body></html>")
    assert browser.page_requests(open_page, tmp_path) == ["http://127.0.0.1:9/figure.png"]  # the detector sees it
    locked = tmp_path / "locked.html"
    locked.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{html.CSP}">'
        f"</head><body>{image}</body></html>"
    )
    (tmp_path / "netlog.json").unlink()
    assert browser.page_requests(locked, tmp_path) == []  # the report's CSP blocks it in the browser


def test_screenshot_shows_the_page(report, keep):
    from matplotlib.image import imread

    shot = browser.screenshot(report, keep / "report-screenshot.png")
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (2600, 1200)
    not_white = (pixels < 0.95).any(axis=2)
    assert 0.03 < not_white.mean() < 0.9
    colours = {tuple(row) for row in (pixels[not_white] * 15).round().astype(int)[::7]}
    assert len(colours) > 40  # figures and text in colour, not a blank or a single-colour page


def test_prints_to_pdf(report, keep):
    pdf = browser.print_pdf(report, keep / "report.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 3
