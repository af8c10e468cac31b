"""``featx study report``: one self-contained HTML page over a whole study, with interactive plotly figures.

plotly.js is embedded once, in the page's head; each figure is a JSON block that the page's own script draws,
so the page opens offline and asks nothing of the network. Its Content-Security-Policy forbids every fetch
(``default-src 'none'``) and allows exactly two scripts, plotly.js and the page's script, by their SHA-256
hashes. Every string from the study table is escaped for HTML, and in the JSON blocks ``<``, ``>`` and ``&``
are written as ``\\u003c``-style escapes, so no name can close a ``<script>`` element."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from ... import __version__
from ...errors import InputError, StoreError, printable
from ..html.parts import table_html
from . import figures
from .script import SCRIPT
from .table import StudyView, view

__all__ = ["DEFAULT_TITLE", "csp", "link_url", "render_study_report", "script_json", "write_study_report"]

DEFAULT_TITLE = "featx study report"
STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; margin: 0 auto;
       max-width: 1200px; padding: 1.5em 2em 4em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.controls { position: sticky; top: 0; z-index: 10; background: #fff; padding: .6em 0; border-bottom: 1px solid #ddd; }
.controls label { margin-right: 1.5em; } .controls select { font: inherit; }
.how { font-size: .92em; color: #333; background: #f6f7f9; padding: .6em .9em; border-left: 3px solid #0072B2; }
table { border-collapse: collapse; font-size: .9em; margin: .6em 0; }
th, td { padding: .2em .7em; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #666; } .warn { color: #a33; } a { color: #0072B2; }
"""


def script_json(value) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` (written as ``\\u003c`` etc.,
    which JSON.parse reads back), and no U+2028/U+2029 line separators."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for character, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        text = text.replace(character, escape)
    return text.replace("\u2029", "\\u2029")


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def csp(*scripts: str) -> str:
    """The page's Content-Security-Policy: nothing fetched, only ``scripts`` run (inline, by their hashes)."""
    return (
        f"default-src 'none'; script-src {' '.join(_hash(s) for s in scripts)}; style-src 'unsafe-inline'; "
        "img-src data:"
    )


def _link_lookup(links: Mapping | None) -> figures.Summary:
    """(model, corpus, label, seed or None) -> URL, for the links keyed by such a tuple (3 or 4 parts)."""
    lookup: figures.Summary = {}
    for key, path in (links or {}).items():
        if isinstance(key, tuple) and len(key) in (3, 4):
            seed = key[3] if len(key) == 4 and key[3] is not None and not pd.isna(key[3]) else None
            lookup[(str(key[0]), str(key[1]), str(key[2]), None if seed is None else int(seed))] = link_url(path)
    return lookup


def _summary_lookup(summary: pd.DataFrame | None) -> figures.Summary:
    if summary is None or not {"model", "corpus", "label"} <= set(summary.columns):
        return {}
    lookup = {}
    for record in summary.to_dict("records"):
        seed = record.get("seed")
        seed = None if seed is None or pd.isna(seed) else int(seed)
        lookup[(str(record["model"]), str(record["corpus"]), str(record["label"]), seed)] = record
    return lookup


def _figure_html(index: int, title: str, spec: dict, how: str) -> str:
    return (
        f'<section><h2 id="figure-{index}">{html.escape(title)}</h2>\n'
        f'<div class="study-plot" id="study-fig-{index}"></div>\n'
        f'<script type="application/json" id="study-fig-{index}-data">'
        f"{script_json({'data': spec['data'], 'layout': spec['layout']})}</script>\n"
        f'<p class="how"><strong>How to read this.</strong> {html.escape(how)}</p></section>'
    )


EXPECTED_HOW = (
    "Each model's expected layer per task, over its number of layers so that models of different depth line "
    "up (hover: the absolute E[l], and the study summary's where it has one). E[l] = sum l * delta(l) / sum "
    "delta(l) over the layers l = 1..L (Tenney et al. 2019, BERT Rediscovers the Classical NLP Pipeline), "
    "where delta(l) = s(l) - s(l-1) is what layer l adds to the model's layer curve made cumulative (s(l) = "
    "the best score of layers 0..l, as Tenney's scalar mixes of layers 0..l are; so every delta is >= 0). "
    "A task solved in the early layers reads low, one that keeps gaining late reads high. No point: no layer "
    "improves on the first, and E[l] is undefined."
)


def _figures(study: StudyView, summary: figures.Summary, links: figures.Summary) -> list[tuple[str, dict, str]]:
    return [
        (
            "Best score per task and model",
            figures.heatmap_figure(study, "score", summary, links),
            "Each cell: the row the study chose on the training part for that model and task (else the best "
            "selection score, else the best test score, as the hover says), at the metric and pooling selected "
            "above. Hover: the score with its 95% interval, its layer, pooling and probe, and the references. "
            "Click a cell to open its own report, where the study links one.",
        ),
        (
            "Relative depth of that row",
            figures.heatmap_figure(study, "depth", summary, links),
            "Each cell: the layer of the row in the heatmap above over the model's number of layers (0 = the "
            "embeddings, 1 = the last layer). Hover: where the study summary has it, the layers not significantly "
            "different from the chosen one and their depth range (a wide range reads as a flat curve, not a best "
            "layer), and those significantly above it on the test rows, which the choice on the training part missed.",
        ),
        (
            "Layer curves",
            figures.curves_figure(study),
            "Per task, every model's score at each layer, on a relative-depth axis so that models of different "
            "depth line up, with its 95% interval as a band (where the table has one); dotted: the lexical "
            "baseline; dashed: the majority class (for a number, the training mean). Hover: a point's score and "
            "its row's baselines. Click a legend entry to hide or show a model.",
        ),
        ("Expected layer", figures.expected_figure(study, summary), EXPECTED_HOW),
    ]


def _controls(study: StudyView) -> str:
    metric, pooling = study.combos[study.default]

    def options(values: list[str], selected: str) -> str:
        return "".join(
            f'<option value="{i}"{" selected" if value == selected else ""}>{html.escape(value)}</option>'
            for i, value in enumerate(values)
        )

    pairs = [[study.metrics.index(m), study.poolings.index(p)] for m, p in study.combos]
    controls = script_json({"combos": pairs, "default": study.default})
    return (
        '<div class="controls">'
        f'<label>Metric <select id="study-metric">{options(study.metrics, metric)}</select></label>'
        f'<label>Pooling <select id="study-pooling">{options(study.poolings, pooling)}</select></label>'
        '<span id="study-no-rows" class="warn" hidden>The study has no rows for this metric and pooling.</span>'
        "</div>\n"
        f'<script type="application/json" id="study-controls">{controls}</script>'
    )


def _summary_html(summary: pd.DataFrame | None) -> str:
    if summary is None:
        return ""
    shown = summary.apply(
        lambda column: column.map(lambda v: "-" if v != v else f"{v:.3f}") if column.dtype.kind == "f" else column
    )
    shown = shown.astype(object).where(shown.notna(), "-")  # an empty text cell (a corpus without group)
    return (
        '<section><h2>Summary</h2>\n<p class="muted">The study\'s own summary, per model and task: the chosen layer, '
        "the layers not significantly different from it and those significantly above it, its relative depth, the "
        "gains over the majority and lexical baselines and the control, and the expected layer.</p>\n"
        + table_html(shown)
        + "</section>"
    )


def _grouped_html(table: pd.DataFrame) -> str:
    """Which corpora kept groups of rows whole (``[[corpora]] group``: the results table's ``group``), if any."""
    if "group" not in table.columns:
        return ""
    pairs = table[["corpus", "group"]].dropna().astype(str).drop_duplicates()
    pairs = pairs[pairs["group"] != ""]
    if pairs.empty:
        return ""
    named = ", ".join(f"{corpus} by {group}" for corpus, group in zip(pairs["corpus"], pairs["group"], strict=True))
    return (
        f'<p class="muted">Grouped corpora: {html.escape(named)}. Their probes\' folds, holdouts and bootstrap '
        "resamples, and the model-vs-model tests, keep each group of rows whole.</p>"
    )


def link_url(path) -> str:
    """A report's path as a relative URL: every character outside a path's plain set percent-escaped, so a
    ``javascript:``, ``"`` or ``<`` in it reads as part of a file name."""
    return quote(os.fspath(path).replace(os.sep, "/"), safe="/._-~")


def _href(path) -> str:
    return html.escape(link_url(path), quote=True)


def _cell_name(key) -> str:
    """A link's key as the page names the cell: ``model · corpus · label``, and ``· seed N`` where the key has a seed
    (``featx study report`` keys a trained model's cell with the seed None)."""
    if not isinstance(key, tuple):
        return str(key)
    parts = [str(part) for part in key[:3]] + [f"seed {part}" for part in key[3:] if part is not None]
    return " · ".join(parts)


def _links_html(links: Mapping | None) -> str:
    if not links:
        return ""
    rows = []
    for key, path in sorted(links.items(), key=lambda item: str(item[0])):
        cell = _cell_name(key)
        rows.append(
            f'<tr><td>{html.escape(cell)}</td><td><a href="{_href(path)}">{html.escape(os.fspath(path))}</a></td></tr>'
        )
    return (
        '<section><h2>Each cell\'s own report</h2>\n<p class="muted">The full <code>featx report</code> of each '
        "cell: its layer table, references, figures and per-example diagnostics.</p>\n"
        f"<table><thead><tr><th>cell</th><th>report</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _check_inputs(summary, links) -> None:
    if summary is not None and not isinstance(summary, pd.DataFrame):
        raise InputError(
            f"the study summary must be a pandas DataFrame, not {type(summary).__name__}",
            "pass the summary featx.study writes (summary.csv read with pandas), or leave it out",
        )
    if links is not None and not isinstance(links, Mapping):
        raise InputError(
            f"the study report's links must be a mapping cell -> report path, not {type(links).__name__}",
            'pass e.g. {("minilm", "sst2", "label"): "minilm/sst2/label.report.html"}, or leave it out',
        )


def render_study_report(table, *, summary=None, links=None, title: str = DEFAULT_TITLE) -> str:
    """The study report page, as a string (see ``write_study_report``)."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    _check_inputs(summary, links)
    study = view(table)
    plotly_js = get_plotlyjs()
    drawn = _figures(study, _summary_lookup(summary), _link_lookup(links))
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp(plotly_js, SCRIPT)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(printable(title))}</title>\n<style>{STYLE}</style>\n<script>{plotly_js}</script></head>\n"
    )
    counts = f"{len(study.models)} models × {len(study.tasks)} tasks · {len(study.frame):,} rows"
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="muted">{counts} · featx {html.escape(__version__)} · plotly.js {get_plotlyjs_version()}, '
        "embedded: the page opens offline.</p>",
        _grouped_html(table),
        _controls(study),
        *(_figure_html(i, name, figure, how) for i, (name, figure, how) in enumerate(drawn)),
        _summary_html(summary),
        _links_html(links),
        f"<script>{SCRIPT}</script>",
    ]
    # what html.escape leaves (control characters, halves of surrogate pairs) escaped; the script is featx's own
    shown = printable("\n".join(part for part in body[:-1] if part))
    return head + "<body>\n" + shown + f"\n{body[-1]}\n</body></html>\n"


def write_study_report(
    table, output_html: str | os.PathLike, *, summary=None, links=None, title: str = DEFAULT_TITLE
) -> Path:
    """Write one self-contained, offline HTML page over a study: ``table`` is the study's tidy results table
    (``featx.study.load``: one row per model x corpus x label x layer x pooling x classifier), ``summary`` its
    per model x task summary (shown as a table, and in the hovers), ``links`` maps each cell to the relative
    path of its own ``featx report``. Interactive figures (plotly, its JavaScript embedded once): the task x
    model heatmaps of the best score and of its relative depth, every model's layer curve per task with 95%
    bands, the expected layer per task; two selects switch them all between the table's metrics and poolings.
    Returns the page's path."""
    page = render_study_report(table, summary=summary, links=links, title=title)
    path = Path(output_html)
    try:
        from ...safe_files import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, page)
    except OSError as err:
        raise StoreError(
            f"cannot write {path}: {err.strerror or err}", "choose a writable path for the report"
        ) from None
    return path
