"""The study report page, read as text: plotly.js embedded once and nothing fetched, the figures' data equal to
the table's rows, the CSP naming exactly the page's scripts, and hostile names escaped everywhere."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

import pandas as pd
import pytest
from support.study_tables import HOSTILE, study_rows

from featx.errors import StoreError
from featx.report import write_study_report
from featx.report.study import figures, table
from featx.report.study.page import render_study_report

LINKS = {
    ("minilm", "sst2", "label"): "minilm/sst2/label.report.html",
    (HOSTILE, "gum", "upos"): 'javascript:alert("x")',
}


@pytest.fixture(scope="module")
def page() -> str:
    summary = study_rows().groupby(["model", "corpus", "label"], as_index=False).first()
    summary = summary[["model", "corpus", "label"]].assign(chosen_layer=3, tied_layers="2,3", expected_layer=1.5)
    return render_study_report(study_rows(), summary=summary, links=LINKS, title=f"study of {HOSTILE}")


def _scripts(page: str) -> list[str]:
    """The executable scripts (not the JSON blocks)."""
    return re.findall(r"<script>(.*?)</script>", page, flags=re.S)


def _figure(page: str, index: int) -> dict:
    start = page.index(f'<script type="application/json" id="study-fig-{index}-data">')
    body = page[page.index(">", start) + 1 : page.index("</script>", start)]
    return json.loads(body)


def test_plotly_js_is_embedded_once_and_nothing_is_fetched(page):
    from plotly.offline import get_plotlyjs

    scripts = _scripts(page)
    assert len(scripts) == 2 and scripts[0] == get_plotlyjs()
    assert page.count(get_plotlyjs()[:2000]) == 1
    assert re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page) is None
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert policy.startswith("default-src 'none'; script-src ")
    hashes = re.findall(r"'sha256-([^']+)'", policy)
    assert hashes == [base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in scripts]


def test_the_figures_hold_the_tables_numbers(page):
    rows = study_rows()
    chosen = rows[rows.chosen]
    heatmap = _figure(page, 0)["data"]
    assert [trace["visible"] for trace in heatmap] == [True, False, False]  # accuracy x mean first: the chosen rows
    shown = heatmap[0]
    assert shown["x"] == ["minilm", html.escape(HOSTILE, quote=False).replace("$", "&#36;")]
    assert shown["y"] == ["sst2 · label", "gum · upos"]
    for i, (corpus, _) in enumerate((("sst2", "label"), ("gum", "upos"))):
        for j, model in enumerate(("minilm", HOSTILE)):
            row = chosen[(chosen.model == model) & (chosen.corpus == corpus)].iloc[0]
            assert shown["z"][i][j] == pytest.approx(row.score)
            assert f"{row.ci_low:.3f}, {row.ci_high:.3f}] 95%" in shown["text"][i][j]
    assert _figure(page, 1)["data"][0]["z"][0] == [0.75, 0.75]  # layer 3 of 4
    assert (
        "layers not significantly different: 2,3 (relative depth 0.50 to 0.75)"
        in _figure(page, 1)["data"][0]["text"][0][0]
    )
    lines = [t for t in _figure(page, 2)["data"] if t.get("mode") == "lines+markers" and t["meta"]["combo"] == 2]
    curve = rows[(rows.metric == "macro_f1") & (rows.model == "minilm") & (rows.corpus == "sst2")].sort_values("layer")
    assert lines[0]["y"] == pytest.approx(curve.score.tolist()) and lines[0]["x"] == curve.relative_depth.tolist()
    expected = [t for t in _figure(page, 3)["data"] if t["meta"]["combo"] == 0][0]
    want = table.expected_layer(curve.layer, curve.score) / 4
    assert expected["x"][0] == pytest.approx(want) and "study summary: E[l] = 1.50" in expected["text"][0]


@pytest.mark.slow
def test_the_hovers_read_the_summary_featx_study_writes():
    """The summary ``featx study run`` writes (``featx.study.summarise``): the depth hover names its
    ``tied_layers`` spans ("2-3"), and the expected-layer hover gives its E[l] only on the curve it was computed
    on (the chosen pooling and classifier, at the study's metric), never beside another pooling's E[l]."""
    from featx.study import summarise

    rows = study_rows().assign(site="hidden", group=None, p_vs_best=0.5)
    rows["significant_vs_best"] = ~rows.layer.isin([2, 3])
    summary = summarise(rows[rows.metric == "accuracy"])
    assert set(summary.tied_layers) == {"2-3"}
    page = render_study_report(rows, summary=summary)
    depth = _figure(page, 1)["data"][0]["text"][0][0]
    assert "layers not significantly different: 2-3 (relative depth 0.50 to 0.75)" in depth
    expected = {t["meta"]["combo"]: t["text"][0] for t in _figure(page, 3)["data"] if t["name"] == "minilm"}
    e_mean = table.expected_layer(range(5), rows[(rows.model == "minilm") & (rows.pooling == "mean")].score[:5])
    assert f"study summary: E[l] = {e_mean:.2f}" in expected[0]  # accuracy x mean: the summary's own curve
    assert "study summary" not in expected[1] and "study summary" not in expected[2]  # cls; macro-F1


def test_a_summary_span_is_read_in_ascii_digits_and_never_expanded():
    """A summary file's ``tied_layers``: '²' passed str.isdigit and int() raised; a span of a hundred billion
    layers was expanded into a list before its ends were read."""
    assert figures._span_bounds("0-2,4") == (0, 4) and figures._span_bounds("3") == (3, 3)
    for spans in ("\u00b2", "1-\u00b2", "\u0663", "", "x", "3-1", "1,", "1_0"):
        assert figures._span_bounds(spans) is None, spans
    assert figures._span_bounds("0-99999999999") == (0, 99999999999)


def test_heatmap_cells_carry_their_reports_link(page):
    for index in (0, 1):
        cells = _figure(page, index)["data"][0]
        assert cells["customdata"] == [["minilm/sst2/label.report.html", ""], ["", "javascript%3Aalert%28%22x%22%29"]]
        assert "click: this cell's own report" in cells["text"][0][0] and "click" not in cells["text"][0][1]


def test_every_figure_is_a_valid_plotly_figure(page):
    import plotly.graph_objects as go

    for index in range(4):
        figure = go.Figure(_figure(page, index))  # validates every trace and layout property; raises on a typo
        assert len(figure.data) >= 3


def test_hostile_names_are_escaped_in_html_json_and_links(page):
    assert page.count("<script") == 2 + 5  # plotly.js, the page's script; 4 figures and the controls as JSON
    assert "</script><script>alert" not in page and "<img src=x" not in page
    assert html.escape(HOSTILE) in page  # the title and the summary table, as text
    assert (
        figures.label(HOSTILE)
        == '&lt;/script&gt;&lt;script&gt;alert("m")&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &#36;x&#36;'
    )
    assert '"legendgroup":"\\u003c/script\\u003e\\u003cscript\\u003e' in page  # a raw name in JSON: < escaped
    assert 'href="javascript:' not in page and 'href="javascript%3Aalert%28%22x%22%29"' in page
    assert 'href="minilm/sst2/label.report.html"' in page


def test_script_json_leaves_no_way_out_of_a_script_element():
    from featx.report.study.page import script_json

    text = script_json({"name": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"name": "</script><!-- & \u2028"}


def test_the_page_names_the_grouped_corpora_and_shows_a_missing_group_as_a_dash(page):
    """A study whose ``[[corpora]]`` give a group column (the results table's ``group``): the page names each
    grouped corpus and its column; the summary shows an ungrouped corpus's empty group as "-", not "nan"."""
    rows = study_rows()
    rows["group"] = pd.Series([HOSTILE if corpus == "sst2" else None for corpus in rows.corpus], dtype="string")
    summary = rows.groupby(["model", "corpus", "label"], as_index=False, sort=False).first()[
        ["model", "corpus", "group"]
    ]
    grouped = render_study_report(rows, summary=summary.astype({"group": object}))
    assert f"Grouped corpora: sst2 by {html.escape(HOSTILE)}. Their probes" in grouped
    assert "<td>nan</td>" not in grouped and "<td>gum</td><td>-</td>" in grouped
    assert "Grouped corpora" not in page  # a table without a group column: nothing said


def test_write_study_report_writes_the_page(tmp_path):
    path = write_study_report(study_rows(models=("a",), tasks=(("c", "l"),)), tmp_path / "out" / "study.html")
    assert path == tmp_path / "out" / "study.html" and path.read_text().startswith("<!DOCTYPE html>")
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match="cannot write"):
        write_study_report(study_rows(models=("a",), tasks=(("c", "l"),)), tmp_path / "file" / "study.html")


def test_the_cell_list_names_a_seed_and_no_missing_one():
    """``featx study report``'s links are keyed (model, corpus, label, seed or None): a trained model's cell reads
    ``minilm · sst2 · label``, not ``... · None``; a random-weights model's names its seed."""
    from featx.report.study.page import _links_html

    links = {("minilm", "sst2", "label", None): "a.html", ("minilm-random-s1", "sst2", "label", 1): "b.html"}
    cells = re.findall(r"<tr><td>(.*?)</td>", _links_html(links))
    assert cells == ["minilm · sst2 · label", "minilm-random-s1 · sst2 · label · seed 1"]


def test_each_layer_curve_stands_beside_the_majority_and_lexical_baselines(page):
    """Per task, the curves panel draws the majority class (or training mean) dotted beside the lexical baseline,
    and each point's hover gives its row's baselines (majority, lexical; control and selectivity where the table
    has them): TREC's 0.55 at a layer reads apart from a majority of 0.11, SST-2's beside 0.55."""
    traces = [t for t in _figure(page, 2)["data"] if t["meta"]["combo"] == 0]
    baselines = {t["name"]: t for t in traces if t.get("mode") == "lines" and "name" in t}  # not the bands
    assert baselines["majority baseline"]["y"] == [0.5, 0.5] and baselines["lexical baseline"]["y"] == [0.7, 0.7]
    assert sum(t.get("name") == "majority baseline" for t in traces) == 2  # one per task panel
    point = next(t for t in traces if t.get("mode") == "lines+markers")["text"][0]
    assert "majority 0.500 · lexical 0.700" in point and "control" not in point  # NaN: left out
