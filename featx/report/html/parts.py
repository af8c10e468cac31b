"""The building blocks of every ``featx report`` page: the inline style and Content-Security-Policy, figures as
inline SVG with their captions, escaped tables, and the page around them."""

from __future__ import annotations

import html
import re

import pandas as pd

from ... import __version__
from ...errors import printable

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


def figure_html(index: int, title: str, svg: str, how: str) -> str:
    """One figure: its title, the inline SVG (ids prefixed by its index) and the "how to read this" caption."""
    return (
        f'<figure id="figure-{index}"><h3>{html.escape(title)}</h3>\n{embeddable_svg(svg, f"f{index}-")}\n'
        f"<figcaption><strong>How to read this.</strong> {html.escape(how)}</figcaption></figure>"
    )


def table_html(frame: pd.DataFrame, best: list[bool] | None = None) -> str:
    """A table of ``frame`` (every cell escaped; numbers right-aligned), the rows where ``best`` is True marked."""
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in frame.columns)
    body = []
    for position, (_, row) in enumerate(frame.iterrows()):
        cells = "".join(
            f'<td class="num">{html.escape(str(value))}</td>'
            if numeric(value)
            else f"<td>{html.escape(str(value))}</td>"
            for value in row
        )
        marked = ' class="best"' if best is not None and best[position] else ""
        body.append(f"<tr{marked}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def numeric(value) -> bool:
    """Whether a cell reads as a number, interval or p-value (right-aligned)."""
    return bool(re.fullmatch(r"[-+]?[0-9.,<]+(\s\[[0-9.,\s-]+\])?!?", str(value)))


def svg_of(draw, size: tuple[float, float] = (8, 4.8)) -> str:
    """The SVG of a one-panel figure drawn by ``draw(ax)``, in featx's style."""
    import matplotlib.pyplot as plt

    from ..figures.style import RC, svg_text

    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=size, layout="constrained")
        try:
            draw(ax)
            return svg_text(fig)
        finally:
            plt.close(fig)


def svg_of_figure(fig) -> str:
    """The SVG of a whole matplotlib figure (closed afterwards)."""
    import matplotlib.pyplot as plt

    from ..figures.style import svg_text

    try:
        return svg_text(fig)
    finally:
        plt.close(fig)


class _FiguresPlace(str):
    """The type of :data:`FIGURES` alone: a section is the figures' place by its type, never by its text."""


FIGURES = _FiguresPlace("{figures}")
"""The section of a page that ``page_html`` replaces by the figures. Only this object is replaced: a label, a note
or a model name that reads ``{figures}`` is shown as written."""


def page_html(title: str, source: str, sections: list[str], figures: list[tuple[str, str, str]]) -> str:
    """The whole page: a heading, what it was made from (``source``), a navigation bar over the figures, the
    ``sections`` (HTML, in order; the one that is :data:`FIGURES` is replaced by the figures)."""
    nav = " ".join(f'<a href="#figure-{i}">{html.escape(name)}</a>' for i, (name, _, _) in enumerate(figures))
    drawn = "\n".join(figure_html(i, name, svg, how) for i, (name, svg, how) in enumerate(figures))
    body = [
        f"<h1>featx report: {html.escape(title)}</h1>",
        f'<p class="muted">{html.escape(source)} · featx {html.escape(__version__)}</p>',
        f"<nav>{nav}</nav>",
        *(drawn if isinstance(section, _FiguresPlace) else section for section in sections),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>featx report: {html.escape(printable(title))}</title>\n<style>{STYLE}</style></head>\n<body>\n"
        + printable("\n".join(body))  # what html.escape leaves: control characters, halves of surrogate pairs
        + "\n</body></html>\n"
    )


def notes_html(notes: list[str]) -> str:
    """Notes as a muted list (nothing when there are none)."""
    if not notes:
        return ""
    return '<ul class="muted">' + "".join(f"<li>{html.escape(str(note))}</li>" for note in notes) + "</ul>"


def pre_html(text: str) -> str:
    """Terminal text (a featx table) as an escaped <pre> block."""
    return f"<pre>{html.escape(text)}</pre>"


__all__ = [
    "CSP",
    "FIGURES",
    "STYLE",
    "embeddable_svg",
    "figure_html",
    "notes_html",
    "numeric",
    "page_html",
    "pre_html",
    "svg_of",
    "svg_of_figure",
    "table_html",
]
