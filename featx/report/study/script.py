"""The study page's own script (run after plotly.js): draw each figure from its JSON block, switch every
figure to the (metric, pooling) pair the two selects name by showing only the traces whose ``meta.combo`` is
that pair's index, and open a heatmap cell's own report on a click (its URL in ``customdata``). No inline
handler, no eval: the page's Content-Security-Policy allows exactly this script and plotly.js, by their
hashes."""

from __future__ import annotations

__all__ = ["SCRIPT"]

SCRIPT = """
(function () {
  'use strict';
  const read = (id) => JSON.parse(document.getElementById(id).textContent);
  const controls = read('study-controls');
  const plots = Array.from(document.querySelectorAll('div.study-plot'));
  const config = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ['sendDataToCloud']};
  for (const div of plots) {
    const spec = read(div.id + '-data');
    Plotly.newPlot(div, spec.data, spec.layout, config);
    div.on('plotly_click', (event) => {  // a heatmap cell with its report's relative URL in customdata
      const link = event.points.length ? event.points[0].customdata : '';
      if (typeof link === 'string' && link) window.location.assign(link);
    });
  }
  const metric = document.getElementById('study-metric');
  const pooling = document.getElementById('study-pooling');
  const none = document.getElementById('study-no-rows');
  function show() {
    const combo = controls.combos.findIndex((c) => c[0] === Number(metric.value) && c[1] === Number(pooling.value));
    none.hidden = combo >= 0;
    for (const div of plots) {
      Plotly.restyle(div, {visible: div.data.map((trace) => trace.meta.combo === combo)});
    }
    document.body.dataset.combo = String(combo);
  }
  metric.addEventListener('change', show);
  pooling.addEventListener('change', show);
  document.body.dataset.combo = String(controls.default);
})();
"""
