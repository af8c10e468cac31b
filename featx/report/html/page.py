"""``featx report``: one self-contained HTML page per probing run.

Figures are inline SVG (text stays text), the styles are inline, and the page carries a
Content-Security-Policy that forbids every fetch (``default-src 'none'``), so it opens offline and
the browser itself would block any request. The page prints cleanly (A4, one figure never split).
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from ... import __version__
from ...errors import FeatxError, InputError
from ...options import Check, Options
from ..load import default_classifier, layer_rows, load_results, model_name
from .sections import figure_sections, layer_table, run_rows

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; margin: 0 auto;
       max-width: 1100px; padding: 1.5em 2em 4em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: .9em; margin: .6em 0; }
th, td { padding: .2em .7em; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } tr.best td { font-weight: 600; background: #fff4d6; }
figure { margin: 1.2em 0 2em; break-inside: avoid; page-break-inside: avoid; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: .92em; color: #333; background: #f6f7f9; padding: .6em .9em; border-left: 3px solid #0072B2; }
pre { background: #f6f7f9; padding: .8em; overflow-x: auto; font-size: .85em; }
.muted { color: #666; } nav a { margin-right: 1em; color: #0072B2; }
@page { size: A4; margin: 12mm; }
@media print { body { max-width: none; padding: 0; font-size: 11pt; } nav { display: none; }
               h2 { break-after: avoid; } table, pre { break-inside: avoid; } }
"""


def embeddable_svg(svg: str, prefix: str) -> str:
    """A matplotlib SVG made fit to inline: no metadata (it holds URLs), no xmlns URLs (the HTML parser
    knows SVG), and its ids prefixed so that several figures on one page never share one."""
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = re.sub(r'(\bid="|url\(#|href="#)([^")]+)', lambda m: m.group(1) + prefix + m.group(2), svg)
    return re.sub(r"<svg\b", '<svg role="img"', svg, count=1)


def _figure_html(index: int, title: str, svg: str, how: str) -> str:
    return (
        f'<figure id="figure-{index}"><h3>{html.escape(title)}</h3>\n{embeddable_svg(svg, f"f{index}-")}\n'
        f"<figcaption><strong>How to read this.</strong> {html.escape(how)}</figcaption></figure>"
    )


def _table_html(frame: pd.DataFrame, best: list[bool] | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in frame.columns)
    body = []
    for position, (_, row) in enumerate(frame.iterrows()):
        cells = "".join(
            f'<td class="num">{html.escape(str(value))}</td>'
            if _numeric(value)
            else f"<td>{html.escape(str(value))}</td>"
            for value in row
        )
        marked = ' class="best"' if best is not None and best[position] else ""
        body.append(f"<tr{marked}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _numeric(value) -> bool:
    return bool(re.fullmatch(r"[-+]?[\d.,<]+(\s\[[\d.,\s-]+\])?!?", str(value)))


def _explain_html(results_path) -> str:
    from ...probing.analyses.explain import Explanation, explain

    try:
        found = explain(results_path)
    except FeatxError as error:
        return f'<p class="muted">No per-example diagnostics: {html.escape(error.message)}</p>'
    if not isinstance(found, Explanation):  # a regression run: featx explain prints its residuals
        return '<p class="muted">No per-example diagnostics in the page for a regression run: see featx explain.</p>'
    accuracy = found.correct.mean().to_frame("accuracy").T.round(3)
    parts = [
        f"<p>From {html.escape(found.predictions_path.name)} ({html.escape(found.predictions_for)}, "
        f"{len(found.correct):,} rows).</p>",
        "<h3>Accuracy by layer</h3>",
        _table_html(accuracy),
    ]
    for title, frame, extra in (
        ("Rows right from some layer on", found.flips, "first_right_layer"),
        ("Rows wrong at every layer", found.always_wrong, "last_prediction"),
    ):
        columns = [c for c in ("id", "label", extra, "text") if c in frame.columns]
        parts += [
            f"<h3>{title} ({len(frame):,}; the first 10)</h3>",
            _table_html(frame[columns].head(10)) if len(frame) else "<p>(none)</p>",
        ]
    for title, frame in (
        ("Per-class F1 by layer", found.per_class_f1),
        ("Accuracy by length (tokens)", found.by_length),
        ("Accuracy by truncation", found.by_truncation),
    ):
        parts += [f"<h3>{title}</h3>", _table_html(frame.round(3).reset_index())]
    return "\n".join(parts)


def render(results, classifier: str | None = None) -> str:
    """The report page for one results file, as a string."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    if not isinstance(results, (str, os.PathLike)):
        raise InputError("featx report needs a results file path", "give the .probe.csv written by featx probe")
    frame, meta = load_results(results)
    classifier = classifier or default_classifier(frame)
    layer_rows(frame, classifier)  # fails early, with the classifiers there, on a wrong --classifier
    title = f"{model_name(meta)} · label: {meta.get('label', '?')}"
    figures = figure_sections(frame, meta, classifier, Path(results))
    nav = " ".join(f'<a href="#figure-{i}">{html.escape(name)}</a>' for i, (name, _, _) in enumerate(figures))
    body = [
        f"<h1>featx report: {html.escape(title)}</h1>",
        f'<p class="muted">{html.escape(str(Path(results).name))} · probe: {html.escape(classifier)} · '
        f"featx {html.escape(__version__)}</p>",
        f"<nav>{nav}</nav>",
        "<h2>The run</h2>",
        _table_html(pd.DataFrame(run_rows(meta), columns=["", "value"])),
        "<h2>Layer table</h2>",
    ]
    table, best = layer_table(frame, classifier)
    body += [
        _table_html(table, best),
        '<p class="muted">Highlighted: the best layer of each pooling. '
        "p vs best: paired test against the pooling's best layer, Holm-adjusted; ! = significant at 0.05.</p>",
        "<h2>Figures</h2>",
    ]
    body += [_figure_html(i, name, svg, how) for i, (name, svg, how) in enumerate(figures)]
    body += ["<h2>Per-example diagnostics (featx explain)</h2>", _explain_html(results)]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>featx report: {html.escape(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _results_path(config: ReportConfig) -> None:
    if not isinstance(config.results, (str, os.PathLike)):
        raise InputError("featx report needs a results file path", "give the .probe.csv written by featx probe")


@dataclass(frozen=True)
class ReportConfig(Options):
    """What ``featx report`` renders (``results``, the rows of ``classifier``) and where it writes it
    (``output``; default beside the results, ``x.probe.csv`` -> ``x.report.html``)."""

    results: Any = None
    output: str | os.PathLike | None = None
    classifier: str | None = None

    CONSTRAINTS: ClassVar[tuple[Check, ...]] = (_results_path,)


def write_report(results, output: str | os.PathLike | None = None, classifier: str | None = None) -> Path:
    """Write the report page (default: beside the results, ``x.probe.csv`` -> ``x.report.html``); ``results``
    may also be a whole ``ReportConfig``. Returns the page's path."""
    config = results if isinstance(results, ReportConfig) else ReportConfig(results, output, classifier)
    path = Path(config.output) if config.output is not None else default_output(Path(config.results))
    page = render(config.results, config.classifier)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as err:
        from ...errors import StoreError

        raise StoreError(f"cannot write {path}: {err.strerror or err}", "choose a writable path with -o") from None
    return path


def default_output(results: Path) -> Path:
    """``x.probe.csv`` (or .probe.json, .csv, .json) -> ``x.report.html`` beside it."""
    name = results.name
    for suffix in (".probe.csv", ".probe.json", ".csv", ".json"):
        if name.endswith(suffix):
            return results.with_name(name[: -len(suffix)] + ".report.html")
    return results.with_name(name + ".report.html")
