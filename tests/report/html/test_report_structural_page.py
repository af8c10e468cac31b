"""``featx report`` of structural probe results (featx.report.html.structural): the table with the baseline, the
chosen and best-on-test rows, the figure, every string of the file escaped, and a malformed file refused."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from support.structural_results import structural_payload, write_structural

from featx.cli import main
from featx.report import write_report

HOSTILE = '<script>alert("x")</script>'


def _cells(text: str) -> list[list[str]]:
    """The rows of the layer table (the second table), as lists of cell texts."""
    table = re.findall(r"<table>.*?</table>", text, flags=re.S)[1]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>.*?</tr>", table)[1:]]


def test_the_page_holds_the_table_the_baseline_the_choices_and_the_figure(tmp_path):
    path = write_report(write_structural(tmp_path / "w.distance.structural.json"))
    assert path == tmp_path / "w.distance.structural.report.html"
    text = path.read_text(encoding="utf-8")
    rows = _cells(text)
    assert rows[0][:6] == ["linear chain (baseline)", "-", "0.350 [0.330, 0.370]", "", "0.450 [0.430, 0.470]", ""]
    assert len(rows) == 9 and rows[2][:4] == ["mean", "1", "0.400 [0.380, 0.420]", "+0.050"]
    assert rows[2][-1] == "chosen (training sentences)" and rows[7][-1] == "best on test"  # first, layer 2
    assert re.search(r'<tr class="best"><td>mean</td><td class="num">1</td>', text)
    assert len(re.findall(r'<tr class="best">', text)) == 1
    assert "Layer 1 (mean) chosen on the training sentences: UUAS 0.400 [0.380, 0.420] against the linear chain" in text
    assert "Best on the test sentences (not a fair choice): layer 2 (first), UUAS 0.550 (+0.150)." in text
    assert text.count("<svg") == 1 and "linear chain baseline: 0.35" in text and "a note" in text


def test_every_string_of_the_file_is_escaped(tmp_path):
    payload = structural_payload(mode="depth", model=HOSTILE, poolings=(HOSTILE, "mean"))
    payload["meta"]["notes"] = [HOSTILE]
    payload["meta"]["punctuation"] = HOSTILE
    path = write_structural(tmp_path / f"{'&lt;'}w.json", payload)
    result = CliRunner().invoke(main, ["report", str(path), "-o", str(tmp_path / "page.html")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "<script" not in text and "alert(" in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text  # the title, tables and notes
    assert "&amp;lt;w.json" in text and "word position (baseline)" in text and "root accuracy [95% CI]" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "uuas"], "--metric does not apply to the structural probe results"),
        (["--classifier", "mlp"], "--classifier does not apply"),
    ],
)
def test_options_that_do_not_apply_are_refused(tmp_path, args, message):
    path = write_structural(tmp_path / "w.distance.structural.json")
    result = CliRunner().invoke(main, ["report", str(path), *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_a_malformed_file_is_one_clear_error(tmp_path):
    payload = structural_payload()
    payload["results"][3]["layer"] = "<img src=x>"
    path = write_structural(tmp_path / "w.distance.structural.json", payload)
    result = CliRunner().invoke(main, ["report", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "is not featx structural probe results: results row 4 has layer '<img src=x>'" in result.output
    assert not list(tmp_path.glob("*.html"))
