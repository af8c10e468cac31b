"""The study report in headless Chromium, in one run: the page (hostile model name included) loads with no
console message and no network request under its own CSP, plotly draws the four figures, a point's hover label
shows its value and interval, and the metric and pooling selects switch the traces every figure shows."""

from __future__ import annotations

import html
import json

import pytest
from support import browser
from support.study_tables import HOSTILE, study_rows

from featx.report import write_study_report

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        browser.chromium() is None, reason="no chromium binary (apt-get install chromium, or set FEATX_CHROMIUM)"
    ),
]

# Run after the page's own script: hover the first shown point of the layer curves, then pick the second metric
# (macro-F1, at mean pooling: the third pair) and then cls pooling (a pair with no rows), recording what shows.
CHECK = """
window.addEventListener('load', () => {
  const plots = Array.from(document.querySelectorAll('div.study-plot'));
  const shown = () => plots.map((div) => div.data.flatMap((trace, i) => (trace.visible === true ? [i] : [])));
  const combos = () => plots.map((div) => [
    ...new Set(div.data.filter((trace) => trace.visible === true).map((trace) => trace.meta.combo)),
  ]);
  const cells = plots[0].querySelectorAll('.heatmap-label').length;
  const ticks = Array.from(plots[0].querySelectorAll('.xtick text')).map((node) => node.textContent);
  const curves = plots[2];
  const line = curves.data.findIndex((trace) => trace.visible === true && trace.mode === 'lines+markers');
  Plotly.Fx.hover(curves, [{curveNumber: line, pointNumber: 0}]);
  const hover = Array.from(curves.querySelectorAll('.hovertext')).map((node) => node.textContent).join(' | ');
  const before = combos(), shownBefore = shown();
  const select = (id, value) => {
    const control = document.getElementById(id);
    control.value = value;
    control.dispatchEvent(new Event('change'));
  };
  select('study-metric', '1');
  const afterMetric = combos(), shownAfter = shown();
  select('study-pooling', '1');
  const out = document.createElement('pre');
  out.id = 'study-check';
  out.textContent = JSON.stringify({
    svgs: plots.map((div) => div.querySelectorAll('svg.main-svg').length),
    cells, ticks,
    hover, before, afterMetric, shownBefore, shownAfter, afterPooling: combos(),
    noRows: !document.getElementById('study-no-rows').hidden,
  });
  document.body.appendChild(out);
});
"""


def test_the_page_loads_quietly_offline_and_its_figures_respond(tmp_path):
    page = write_study_report(study_rows(), tmp_path / "study.html")
    dom, console, requests = browser.checked_load(page, tmp_path, CHECK)
    assert console == [] and requests == []
    start = dom.index('<pre id="study-check">') + len('<pre id="study-check">')
    found = json.loads(html.unescape(dom[start : dom.index("</pre>", start)]))
    assert found["svgs"] == [3, 3, 3, 3] and found["cells"] == 4  # plotly drew each figure, the heatmap's cells
    assert found["ticks"] == ["minilm", HOSTILE]  # a hostile name drawn as its own text: no tag, no MathJax
    assert "minilm · sst2 · label" in found["hover"] and "accuracy: 0.800 [0.760, 0.840] 95%" in found["hover"]
    assert found["before"] == [[0]] * 4 and found["afterMetric"] == [[2]] * 4
    assert all(before != after for before, after in zip(found["shownBefore"], found["shownAfter"], strict=True))
    assert found["afterPooling"] == [[]] * 4 and found["noRows"]
